"""Operator admin of privacy: erasure requests, created here through `erasure_request_create`, like
through the API, carried out by the erasure task, and followed here (status, counts, verification,
receipt), never edited; and whole-tenant exports, filed from the tenant list."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from celery import current_app
from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from privacy.erasure import LOCATIONS, locate, subject_hash
from privacy.export import export_file_path, tenant_export_files
from privacy.models import ErasureRequest, ErasureStatus
from privacy.services import erasure_request_create, tenant_export_file_request
from tenants.admin import (
    TenantOwnedAdmin,
    breakable,
    operator_tenant_ids,
    stacked,
    timestamp_column,
)
from tenants.models import Tenant


def queue_waiting(queue: str) -> int | None:
    """Tasks waiting in a broker queue, or None when the broker does not answer."""
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1)
            channel: Any = connection.default_channel
            return int(channel.queue_declare(queue=queue, passive=True).message_count)
    except Exception:  # noqa: BLE001  # a page of the admin, not the broker's health check
        return None


class ErasureRequestForm(forms.ModelForm):
    # Kept exactly as typed: " carol" and "carol" are two subjects (DESIGN.md invariant 12).
    subject = forms.CharField(
        max_length=255, strip=False, help_text="The subject id whose memory is to be erased, everywhere (exactly)."
    )

    def clean_subject(self) -> str:
        subject = str(self.cleaned_data["subject"])
        if not subject.strip():
            raise forms.ValidationError("A subject id must hold a character other than whitespace.")
        return subject

    class Meta:
        model = ErasureRequest
        fields = ("tenant", "subject", "reason")


@admin.register(ErasureRequest)
class ErasureRequestAdmin(TenantOwnedAdmin):
    """File a request (the erasure task carries it out after the commit), then follow it: status,
    rows removed per location, the verification that none remain, the receipt. The subject id itself
    is never shown again: once done, only its hash is kept."""

    form = ErasureRequestForm
    # When it finished is in the age ("done in ..."); the id, the attempts and the counts per location
    # are on the request's page (issue 44: fits 1280 px).
    list_display = (
        "created",
        "status_age",
        "requested_by_shown",
        "due",
        "removed_total",
        "verified",
        "tenant",
    )
    list_filter = ("status", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=subject_hash",)
    search_help_text = "The subject id (hashed here, never stored) or the SHA-256 subject hash of a receipt."
    ordering = ("-created_at",)
    show_full_result_count = False
    view_fields = (
        "id",
        "tenant",
        "status",
        "queue_state",
        "subject_hash",
        "requested_by",
        "reason",
        "deadline",
        "created_at",
        "started_at",
        "completed_at",
        "attempts",
        "error",
        "counts_pretty",
        "verification_pretty",
        "receipt_pretty",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("tenant", "subject", "reason") if obj is None else self.view_fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        # Only the hash is kept: hash what the operator typed, once per tenant they operate.
        # The subject id as typed (never trimmed: it is an exact string); a receipt's hash, trimmed.
        term = search_term.strip()
        if not term:
            return queryset, False
        tenants = Tenant.objects.filter(id__in=operator_tenant_ids(request))
        digests = {subject_hash(tenant, search_term) for tenant in tenants} | {term.lower()}
        return queryset.filter(subject_hash__in=digests), False

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        """Filing asks first: the rows the subject has now, per location, and a warning when there are
        none (most often a mistyped id, which would otherwise finish 'Done' with nothing removed)."""
        if request.method == "POST" and request.POST.get("confirmed") != "yes" and self.has_add_permission(request):
            form = self.get_form(request)(request.POST)
            if form.is_valid():
                tenant, subject = form.cleaned_data["tenant"], form.cleaned_data["subject"]
                counts = locate(tenant=tenant, subject=subject)
                counts.pop("erasure_requests", None)
                described = {loc.name: loc.describe for loc in LOCATIONS}
                context = {
                    **self.admin_site.each_context(request),
                    "title": "File this erasure request?",
                    "opts": self.opts,
                    "tenant": tenant,
                    "subject": subject,
                    "reason": form.cleaned_data.get("reason") or "",
                    "counts": [(name, n) for name, n in counts.items()],
                    "rows": [(name.replace("_", " "), n, described.get(name, "")) for name, n in counts.items()],
                    "total": sum(counts.values()),
                }
                return TemplateResponse(request, "admin/privacy/erasurerequest/confirm.html", context)
        return super().add_view(request, form_url, extra_context)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if obj is None else self.view_fields

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        ids = operator_tenant_ids(request)
        return {"tenant": next(iter(ids))} if len(ids) == 1 else {}

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The request is the audit record of an erasure; it holds no personal data once done.
        return False

    def save_model(self, request: HttpRequest, obj: ErasureRequest, form: Any, change: bool) -> None:
        created = erasure_request_create(
            tenant=form.cleaned_data["tenant"],
            subject=form.cleaned_data["subject"],
            requested_by=f"operator:{request.user.get_username()}",
            reason=form.cleaned_data.get("reason") or "",
        )
        obj.pk = created.pk
        obj._state.adding = False
        obj.subject_hash = created.subject_hash
        obj.status = created.status
        obj.created_at = created.created_at

    def response_add(self, request: HttpRequest, obj: ErasureRequest, post_url_continue: str | None = None) -> Any:
        # Straight to the request's page, to follow its status.
        self.message_user(request, "Erasure request filed; it runs in the background.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:privacy_erasurerequest_change", args=[obj.pk]))

    created = timestamp_column("created_at", "created")
    due = timestamp_column("deadline", "deadline")

    @admin.display(description="status", ordering="status")
    def status_age(self, obj: ErasureRequest) -> str:
        return stacked(obj.get_status_display(), self.age(obj))

    @admin.display(description="requested by", ordering="requested_by")
    def requested_by_shown(self, obj: ErasureRequest) -> str:
        return breakable(obj.requested_by) or "-"

    @admin.display(description="id")
    def short_id(self, obj: ErasureRequest) -> str:
        return str(obj.pk)[:8]

    @admin.display(description="age")
    def age(self, obj: ErasureRequest) -> str:
        if obj.status == ErasureStatus.DONE and obj.completed_at:
            return f"done in {_duration(obj.created_at, obj.completed_at)}"
        state = "waiting" if obj.started_at is None else "running"
        return f"{state} {_duration(obj.created_at, timezone.now())}"

    @admin.display(description="queue")
    def queue_state(self, obj: ErasureRequest) -> str:
        started = (
            "not started" if obj.started_at is None else f"started {_duration(obj.started_at, timezone.now())} ago"
        )
        if obj.status == ErasureStatus.DONE:
            return f"{self.age(obj)}; {started}"
        waiting = queue_waiting("erasure")
        depth = "unknown (broker unreachable)" if waiting is None else f"{waiting} task(s) waiting"
        return f"{self.age(obj)}; {started}; attempts {obj.attempts}; erasure queue: {depth}"

    @admin.display(description="rows removed")
    def removed_total(self, obj: ErasureRequest) -> int:
        return sum(v for v in (obj.counts or {}).values() if isinstance(v, int))

    @admin.display(description="verified", boolean=True)
    def verified(self, obj: ErasureRequest) -> bool | None:
        remaining = (obj.verification or {}).get("remaining")
        if remaining is None:
            return None
        return not any(remaining.values())

    @admin.display(description="removed, per location")
    def counts_pretty(self, obj: ErasureRequest) -> str:
        counts = {k: v for k, v in (obj.counts or {}).items() if isinstance(v, int)}
        if not counts:
            return "-"
        remaining = (obj.verification or {}).get("remaining") or {}
        described = {loc.name: loc.describe for loc in LOCATIONS}
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td class='engram-num'>{}</td><td class='engram-num'>{}</td><td>{}</td></tr>",
            (
                (name.replace("_", " "), n, remaining.get(name, "-"), described.get(name, ""))
                for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            ),
        )
        total = sum(counts.values())
        warning = (
            mark_safe(  # noqa: S308 - a constant
                '<p class="engram-warning">Nothing was found for this subject: no row was removed anywhere. '
                "If the id was mistyped, file a new request with the right one.</p>"
            )
            if total == 0 and obj.status == ErasureStatus.DONE
            else ""
        )
        return format_html(
            '{}<table class="engram-receipt"><thead><tr><th>location</th><th>rows removed</th>'
            "<th>left after verification</th><th>what it holds</th></tr></thead><tbody>{}</tbody>"
            '<tfoot><tr><th>total</th><th class="engram-num">{}</th><th></th><th></th></tr></tfoot></table>',
            warning,
            rows,
            total,
        )

    @admin.display(description="verification")
    def verification_pretty(self, obj: ErasureRequest) -> str:
        verification = obj.verification or {}
        remaining = verification.get("remaining")
        if remaining is None:
            return "not verified yet"
        left = {k: v for k, v in remaining.items() if v}
        when = _when(verification.get("verified_at", ""))
        if left:
            return format_html("rows remain at {}: {}", when, ", ".join(f"{k} {v}" for k, v in sorted(left.items())))
        return f"none of the subject's rows remain in {len(remaining)} locations (checked {when})"

    @admin.display(description="receipt")
    def receipt_pretty(self, obj: ErasureRequest) -> str:
        receipt = obj.receipt or {}
        if not receipt:
            return "-"
        locations = receipt.get("locations") or {}
        return format_html(
            '<dl class="engram-receipt-summary"><dt>request</dt><dd>{}</dd><dt>subject hash</dt><dd><code>{}</code></dd>'
            "<dt>completed</dt><dd>{}</dd><dt>rows removed</dt><dd>{} in {} locations</dd>"
            "<dt>verified empty</dt><dd>{} locations</dd></dl>",
            receipt.get("request_id", ""),
            receipt.get("subject_hash", ""),
            _when(receipt.get("completed_at", "")),
            sum(v for v in locations.values() if isinstance(v, int)),
            len(locations),
            len(receipt.get("verified_zero") or []),
        )


def _duration(start: datetime, end: datetime) -> str:
    """How long from start to end as a person says it: seconds under a minute (timesince says "0
    minutes"), else timesince's minutes, hours and days."""
    seconds = int((end - start).total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)}\xa0second{'' if seconds == 1 else 's'}"
    return timesince(start, end)


def _when(stored: str) -> str:
    """An ISO timestamp of a receipt (microseconds and all) in the admin's time zone, to the second."""
    try:
        moment = datetime.fromisoformat(stored)
    except (TypeError, ValueError):
        return stored
    if timezone.is_naive(moment):
        return stored
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z")


# --- tenant exports, filed from the tenant list ---------------------------------------------------

_TenantAdmin: type[admin.ModelAdmin] = type(admin.site._registry[Tenant])


class TenantWithExportsAdmin(_TenantAdmin):  # type: ignore[valid-type,misc]
    """The tenants admin, plus whole-tenant exports: an action files one (a Celery task taking the
    tenant's id writes the file), and the tenant's page links each file once it is complete. Here
    rather than in tenants/admin.py: the export belongs to this app, and tenants imports nothing above it."""

    actions = (*(_TenantAdmin.actions or ()), "export_selected")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        base = tuple(super().get_readonly_fields(request, obj))
        return base if obj is None else (*base, "exports")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_fields(request, obj))
        return fields if obj is None or "exports" in fields else [*fields, "exports"]

    @admin.action(description="Export selected tenants (a file per tenant, written in the background)")
    def export_selected(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset.filter(id__in=operator_tenant_ids(request)):
            name = tenant_export_file_request(tenant=tenant)
            self.message_user(
                request,
                f"Export of {tenant.slug} filed as {name}; its page links the file when it is written.",
                messages.SUCCESS,
            )

    @admin.display(description="exports")
    def exports(self, obj: Tenant) -> str:
        files = tenant_export_files(tenant=obj)
        if not files:
            return "none yet (use the action 'Export selected tenants' on the list)"
        items = format_html_join(
            "",
            "<li>{}</li>",
            (
                (
                    format_html(
                        '<a href="{}">{}</a> · {} · {}',
                        reverse("admin:tenants_tenant_export", args=[obj.pk, f.name]),
                        f.name,
                        filesizeformat(f.size),
                        f.modified.strftime("%Y-%m-%d %H:%M"),
                    )
                    if f.done
                    else format_html("{} · being written ({} so far)", f.name, filesizeformat(f.size)),
                )
                for f in files
            ),
        )
        return format_html('<ul class="engram-exports">{}</ul>', items)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.export_download)
        return [path("<uuid:tenant_id>/exports/<str:name>", view, name="tenants_tenant_export"), *super().get_urls()]

    def export_download(self, request: HttpRequest, tenant_id: Any, name: str) -> FileResponse:
        tenant = Tenant.objects.filter(id=tenant_id, id__in=operator_tenant_ids(request)).first()
        if tenant is None or not self.has_view_permission(request, tenant):
            raise Http404("No such export.")
        file = export_file_path(tenant=tenant, name=name)
        if file is None:
            raise Http404("No such export.")
        return FileResponse(open(file, "rb"), as_attachment=True, filename=name)  # noqa: SIM115 - closed by the response


admin.site.unregister(Tenant)
admin.site.register(Tenant, TenantWithExportsAdmin)
