"""The support-agent demo, as data: three users, each with ten multi-turn conversations across
billing, technical issues and feature requests.

A user turn either states facts (`says`) or asks for help that needs named facts (`needs`); the
scripted agent (demo/agent.py) answers when its context holds the current value of every
needed fact and asks for it otherwise. Facts are stated in sentences the offline extractor reads
("Our database is PostgreSQL 15."), so consolidation turns them into facts with sources. One user
migrates from PostgreSQL 15 to 16 half-way, which semantic memory records as a supersession.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class FactSpec:
    key: str
    value: str
    sentence: str  # how the user states it
    question: str  # how the agent asks for it


@dataclasses.dataclass(frozen=True)
class Turn:
    text: str
    says: tuple[str, ...] = ()  # fact keys this message states (their sentences are part of the text)
    needs: tuple[str, ...] = ()  # fact keys the agent needs to answer this message


@dataclasses.dataclass(frozen=True)
class Conversation:
    topic: str  # billing | technical | feature_request
    title: str
    turns: tuple[Turn, ...]
    # Fact values that change with this conversation (key -> new FactSpec), applied before its turns.
    updates: tuple[FactSpec, ...] = ()
    outcome: str = "success"


@dataclasses.dataclass(frozen=True)
class UserScript:
    subject: str
    name: str
    facts: tuple[FactSpec, ...]
    conversations: tuple[Conversation, ...]

    def fact(self, key: str) -> FactSpec:
        return next(f for f in self.facts if f.key == key)


def _say(*specs: FactSpec, lead: str = "") -> Turn:
    text = " ".join([lead, *(s.sentence for s in specs)]).strip()
    return Turn(text=text, says=tuple(s.key for s in specs))


def _user(subject: str, name: str, facts: list[FactSpec], convs: list[Conversation]) -> UserScript:
    return UserScript(subject=subject, name=name, facts=tuple(facts), conversations=tuple(convs))


# Ana: PostgreSQL 15 -> 16, AWS and Kubernetes, on the Team plan. ---------------------------------------
_ana = {
    "name": FactSpec("name", "Ana Ruiz", "My name is Ana Ruiz.", "May I have your name?"),
    "employer": FactSpec("employer", "Brightpath", "I work at Brightpath.", "Which company are you with?"),
    "database": FactSpec("database", "PostgreSQL 15", "Our database is PostgreSQL 15.", "Which database do you run?"),
    "cloud": FactSpec("cloud", "AWS", "Our cloud provider is AWS.", "Which cloud provider do you deploy on?"),
    "orchestration": FactSpec("orchestration", "Kubernetes", "We use Kubernetes.", "What do you run your services on?"),
    "plan": FactSpec("plan", "Team plan", "We are on the Team plan.", "Which plan is your account on?"),
    "timezone": FactSpec("timezone", "Europe/Madrid", "My time zone is Europe/Madrid.", "Which time zone are you in?"),
}
_ana_pg16 = FactSpec("database", "PostgreSQL 16", "We migrated to PostgreSQL 16.", "Which database do you run?")
ANA = _user(
    "ana.ruiz",
    "Ana Ruiz",
    list(_ana.values()),
    [
        Conversation(
            "technical",
            "Connection pool exhaustion",
            (
                _say(_ana["name"], _ana["employer"], lead="Hi there."),
                _say(_ana["database"], _ana["cloud"], _ana["orchestration"]),
                Turn(
                    "Our API pods run out of database connections under load. What pool size should we use?",
                    needs=("database", "orchestration"),
                ),  # fmt: skip
                Turn("Thanks, we will try a pooler in front of it."),
            ),
        ),
        Conversation(
            "billing",
            "Invoice for the last quarter",
            (
                _say(_ana["plan"], lead="Hello, I need the invoice for last quarter."),
                Turn("Can you confirm what we pay per seat on our plan?", needs=("plan",)),
                Turn("Great, please send it to finance."),
            ),
        ),
        Conversation(
            "feature_request",
            "Scheduled exports",
            (
                Turn("We would love scheduled exports of our usage data."),
                Turn("Could the export land in our own cloud storage bucket?", needs=("cloud",)),
                Turn("An S3 bucket would be perfect."),
            ),
        ),
        Conversation(
            "technical",
            "Slow queries after a deploy",
            (
                Turn("Since yesterday's deploy some reports are slow."),
                Turn("Which index settings do you recommend for our database version?", needs=("database",)),
                Turn("We will add the index tonight."),
            ),
        ),
        Conversation(
            "billing",
            "Adding seats",
            (
                Turn("We are hiring and need five more seats."),
                Turn("Is there a discount at our plan for more seats?", needs=("plan",)),
                Turn("Perfect, go ahead."),
            ),
        ),
        Conversation(
            "technical",
            "Database upgrade",
            (
                _say(_ana_pg16, lead="Quick update: the upgrade went fine last weekend."),
                Turn("Is the replication slot setup different on the new version?", needs=("database",)),
                Turn("Understood, thanks."),
            ),
            updates=(_ana_pg16,),
        ),
        Conversation(
            "technical",
            "Rolling restarts",
            (
                Turn("Our rolling restarts drop a few requests."),
                Turn(
                    "How should we configure readiness probes for the database connections?",
                    needs=("orchestration", "database"),
                ),  # fmt: skip
                Turn("That makes sense."),
            ),
        ),
        Conversation(
            "feature_request",
            "Maintenance windows in local time",
            (
                Turn("Could maintenance notices show our local time?"),
                Turn("When would next week's maintenance start for us?", needs=("timezone",)),
                Turn("Thank you."),
            ),
        ),
        Conversation(
            "billing",
            "Annual billing",
            (
                Turn("We are thinking of switching to annual billing."),
                Turn("What would annual billing cost for our company on our plan?", needs=("employer", "plan")),
                Turn("We will decide next week."),
            ),
        ),
        Conversation(
            "technical",
            "Backups before the upgrade window",
            (
                Turn("We want point-in-time recovery."),
                Turn("What backup tool works best with our database on our cloud?", needs=("database", "cloud")),
                Turn("Great, thanks for the help."),
            ),
        ),
    ],
)

# Ben: MySQL 8 on GCP, GitHub Actions, rate limits. ----------------------------------------------------
_ben = {
    "name": FactSpec("name", "Ben Okafor", "My name is Ben Okafor.", "May I have your name?"),
    "employer": FactSpec("employer", "Lumen Labs", "I work at Lumen Labs.", "Which company are you with?"),
    "database": FactSpec("database", "MySQL 8", "Our database is MySQL 8.", "Which database do you run?"),
    "cloud": FactSpec("cloud", "GCP", "Our cloud provider is GCP.", "Which cloud provider do you deploy on?"),
    "ci": FactSpec("ci", "GitHub Actions", "We use GitHub Actions.", "Which CI system do you use?"),
    "plan": FactSpec("plan", "Business plan", "We are on the Business plan.", "Which plan is your account on?"),
    "email": FactSpec("email", "ben@lumenlabs.io", "My email is ben@lumenlabs.io.", "Which email should we use?"),
}
BEN = _user(
    "ben.okafor",
    "Ben Okafor",
    list(_ben.values()),
    [
        Conversation(
            "technical",
            "HTTP 429 during imports",
            (
                _say(_ben["name"], _ben["employer"], lead="Hey."),
                Turn("We keep getting HTTP 429 errors from your API during our nightly import."),
                _say(_ben["ci"], _ben["cloud"]),
                Turn("How should the import job in our CI retry?", needs=("ci",)),
            ),
        ),
        Conversation(
            "billing",
            "Wrong billing contact",
            (
                _say(_ben["email"], _ben["plan"], lead="Our invoices go to an old address."),
                Turn("Please send future invoices to my email.", needs=("email",)),
            ),
        ),
        Conversation(
            "technical",
            "Import crashes",
            (
                Turn("The importer crashes with an exception halfway through."),
                Turn("Is this a known issue with our database?", needs=("database",)),
                _say(_ben["database"]),
                Turn("Here is the stack trace from the log."),
            ),
        ),
        Conversation(
            "feature_request",
            "Webhooks",
            (
                Turn("We would like webhooks when an import finishes."),
                Turn("Can the webhook trigger a workflow in our CI?", needs=("ci",)),
            ),
        ),
        Conversation(
            "technical",
            "Rate limits again",
            (
                Turn("We are rate limited again, too many requests at 2 am."),
                Turn("Can you raise the limit for our plan?", needs=("plan",)),
                Turn("Ok, we will add backoff as well."),
            ),
        ),
        Conversation(
            "billing",
            "Receipt copy",
            (
                Turn("I need a copy of the March receipt."),
                Turn("Send it to me, please.", needs=("email",)),
            ),
        ),
        Conversation(
            "feature_request",
            "Regional hosting",
            (
                Turn("Do you plan to host in more regions?"),
                Turn("We would want the region closest to our cloud setup.", needs=("cloud",)),
            ),
        ),
        Conversation(
            "technical",
            "Schema migration tooling",
            (
                Turn("We need to migrate our schema without downtime."),
                Turn("Which online schema change tool fits our database?", needs=("database",)),
                Turn("We will try it in staging."),
            ),
        ),
        Conversation(
            "billing",
            "Usage overage",
            (
                Turn("We went over our usage this month."),
                Turn("How is overage billed for our company?", needs=("employer", "plan")),
            ),
        ),
        Conversation(
            "feature_request",
            "CLI for imports",
            (
                Turn("A CLI for imports would help our pipeline."),
                Turn("Could it run inside our CI on our cloud?", needs=("ci", "cloud")),
                Turn("Thanks, that would be great."),
            ),
        ),
    ],
)

# Chloé: MongoDB on Azure, Windows developers, VS Code, feature requests. -------------------------------
_chloe = {
    "name": FactSpec("name", "Chloe Martin", "My name is Chloe Martin.", "May I have your name?"),
    "employer": FactSpec("employer", "Orbit Retail", "I work at Orbit Retail.", "Which company are you with?"),
    "database": FactSpec("database", "MongoDB", "Our database is MongoDB.", "Which database do you run?"),
    "cloud": FactSpec("cloud", "Azure", "Our cloud provider is Azure.", "Which cloud provider do you deploy on?"),
    "os": FactSpec("os", "Windows", "We use Windows.", "Which operating system do your developers use?"),
    "editor": FactSpec("editor", "VS Code", "We use VS Code.", "Which editor does your team use?"),
    "plan": FactSpec("plan", "Starter plan", "We are on the Starter plan.", "Which plan is your account on?"),
}
CHLOE = _user(
    "chloe.martin",
    "Chloe Martin",
    list(_chloe.values()),
    [
        Conversation(
            "feature_request",
            "Single sign-on",
            (
                _say(_chloe["name"], _chloe["employer"], lead="Bonjour."),
                Turn("We need single sign-on before we can roll out to the whole team."),
                _say(_chloe["cloud"], _chloe["plan"]),
                Turn("Does SSO work with our identity provider on our cloud?", needs=("cloud",)),
            ),
        ),
        Conversation(
            "technical",
            "SDK install fails",
            (
                _say(_chloe["os"], _chloe["editor"], lead="Installing your SDK fails with an error."),
                Turn("Is there a known problem on our developers' machines?", needs=("os",)),
                Turn("Here is the error log."),
            ),
        ),
        Conversation(
            "billing",
            "Upgrade options",
            (
                Turn("We are growing and might need more."),
                Turn("What do we get if we upgrade from our current plan?", needs=("plan",)),
            ),
        ),
        Conversation(
            "technical",
            "Connector for our database",
            (
                _say(_chloe["database"], lead="We want to sync data from production."),
                Turn("Which connector should we use for our database?", needs=("database",)),
            ),
        ),
        Conversation(
            "feature_request",
            "Editor extension",
            (
                Turn("An extension for our editor would save us time."),
                Turn("Is one planned for the editor we use?", needs=("editor",)),
            ),
        ),
        Conversation(
            "billing",
            "Tax details on invoices",
            (
                Turn("Our invoices need our VAT number."),
                Turn("Can you put it on invoices for our company?", needs=("employer",)),
            ),
        ),
        Conversation(
            "technical",
            "Sync lag",
            (
                Turn("The sync lags behind by an hour."),
                Turn("Is that expected with our database on our cloud?", needs=("database", "cloud")),
                Turn("We will check the change stream settings."),
            ),
        ),
        Conversation(
            "feature_request",
            "CSV export",
            (
                Turn("We need CSV exports for the finance team."),
                Turn("Will they open correctly on our developers' machines?", needs=("os",)),
            ),
        ),
        Conversation(
            "billing",
            "Seat count",
            (
                Turn("How many seats do we have left?"),
                Turn("And what is the seat limit of our plan?", needs=("plan",)),
            ),
        ),
        Conversation(
            "technical",
            "Local development setup",
            (
                Turn("New developers struggle with the local setup."),
                Turn("Can you write a setup guide for our OS and editor?", needs=("os", "editor")),
                Turn("Merci!"),
            ),
        ),
    ],
)

USERS: tuple[UserScript, ...] = (ANA, BEN, CHLOE)
