"""The update probe's pairs: a value said, then a different value of the same thing said later (it must
win), and a value said twice in other words (it must confirm). Shared by the table tests
(tests/semantic/test_updates_win.py) and the benchmark (bench/update_probe.py). Plain data, no Django.

Two forms:
- `SAID_*`: what a user says in two sessions (written as episodes, sessions ended, consolidated); the
  phrasings cover "is now", "moved to", "switched from X to Y", "no longer", "changed my number to",
  "upgraded to", "relocated to", "from now on"...
- `WRITTEN_*`: explicit API writes (POST /v1/facts) of one attribute, with a statement template.

Every value kind is represented: versions, numbers, dates, e-mail addresses, phone numbers, URLs,
amounts, personal and company names, places, products.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol


@dataclass(frozen=True)
class Said:
    """Two things a user said, in two sessions; `new` is the value that holds afterwards."""

    kind: str
    first: str
    then: str
    old: str
    new: str
    question: str

    @classmethod
    def current(cls, kind: str, first: str, then: str, old: str, new: str) -> Said:
        """A pair whose question asks for the current `kind`."""
        return cls(kind, first, then, old, new, question=f"What is the current {kind}?")


@dataclass(frozen=True)
class Written:
    """Two API writes of `attribute`; `statement` takes the value as {v}."""

    kind: str
    attribute: str
    old: str
    new: str
    statement: str
    question: str


# fmt: off
SAID_UPDATES: tuple[Said, ...] = (
    Said("version", "Our database is PostgreSQL 15.", "Our database is PostgreSQL 16.", "PostgreSQL 15", "PostgreSQL 16", "Which database do we use?"),
    Said("version", "Our database is PostgreSQL 15.", "We moved to PostgreSQL 16.", "PostgreSQL 15", "PostgreSQL 16", "Which database version are we on?"),
    Said("version", "Our database is PostgreSQL 14.", "We upgraded to PostgreSQL 16 last week.", "PostgreSQL 14", "PostgreSQL 16", "What database do we run?"),
    Said("version", "Our main database is MongoDB 6.", "Our main database is now MongoDB 7.", "MongoDB 6", "MongoDB 7", "Which MongoDB version is our database?"),
    Said("version", "Our database is MySQL 8.0.", "We switched from MySQL 8.0 to MySQL 8.4.", "MySQL 8.0", "MySQL 8.4", "Which MySQL version do we use?"),
    Said("version", "My operating system is Ubuntu 22.04.", "I switched to Ubuntu 24.04.", "Ubuntu 22.04", "Ubuntu 24.04", "Which Ubuntu release am I on?"),
    Said("version", "Our database is PostgreSQL 12.", "We migrated to PostgreSQL 13.", "PostgreSQL 12", "PostgreSQL 13", "Which database do we use?"),
    # The technical set's phrasings: a known tool said in any first-person sentence, a change of job.
    Said("version", "We run PostgreSQL 15 in production.", "We upgraded the production database to PostgreSQL 16 last week.", "PostgreSQL 15", "PostgreSQL 16", "Which database do we run in production?"),
    Said("product", "My laptop runs Ubuntu 22.04.", "I'm on Fedora 40 now instead of Ubuntu 22.04.", "Ubuntu 22.04", "Fedora 40", "Which operating system am I on?"),
    Said("employer", "I work at Northwind Bank.", "I started a new job at Acme Robotics.", "Northwind Bank", "Acme Robotics", "Where do I work?"),
    Said("product", "Our database is MySQL.", "We switched from MySQL to PostgreSQL.", "MySQL", "PostgreSQL", "Which database do we use?"),
    Said("product", "Our cloud provider is AWS.", "We migrated to Google Cloud.", "AWS", "Google Cloud", "Which cloud are we on?"),
    Said("product", "Our cloud provider is Azure.", "We moved everything to AWS.", "Azure", "AWS", "Which cloud provider do we use?"),
    Said("product", "My editor is Vim.", "I switched to VS Code.", "Vim", "VS Code", "Which editor do I use?"),
    Said("product", "My editor is Emacs.", "My editor is now Neovim.", "Emacs", "Neovim", "What editor do I use?"),
    Said("product", "Our CI is Jenkins.", "We moved from Jenkins to GitHub Actions.", "Jenkins", "GitHub Actions", "Which CI do we use?"),
    Said("product", "My operating system is Windows.", "I switched from Windows to Fedora.", "Windows", "Fedora", "Which operating system do I use?"),
    Said("product", "We run everything on Heroku.", "We migrated to DigitalOcean.", "Heroku", "DigitalOcean", "Where do we host?"),
    Said("phone", "My phone number is +44 20 7946 0001.", "My phone number is +44 20 7946 0002.", "+44 20 7946 0001", "+44 20 7946 0002", "What is my phone number?"),
    Said("phone", "My phone number is +44 20 7946 0101.", "I changed my number to +44 20 7946 0199.", "+44 20 7946 0101", "+44 20 7946 0199", "How can you reach me by phone?"),
    Said("phone", "You can reach me at 555-0134.", "My number is now 555-0178.", "555-0134", "555-0178", "What is my number?"),
    Said("phone", "My mobile is +1 415 555 0123.", "My mobile number changed, it is +1 415 555 0987 now.", "+1 415 555 0123", "+1 415 555 0987", "What is my mobile number?"),
    # A new number said without "phone" before it: the cue after the value, a contact, the old one named.
    Said("phone", "Text me at 0161 496 0100 if anything breaks.", "I got a new SIM: it's 0161 496 0200 now, not 0161 496 0100.", "0161 496 0100", "0161 496 0200", "What is my phone number?"),
    Said("phone", "My number is 0113 496 0444.", "Please use 0113 496 0555 from now on, the old number is disconnected.", "0113 496 0444", "0113 496 0555", "Which number reaches me?"),
    Said("phone", "Call me at +49 30 901810.", "Update my contact details: +49 30 901820.", "+49 30 901810", "+49 30 901820", "How do I get called?"),
    # A job title and a named project's state: single-valued, whatever the verb.
    Said("title", "I work as a junior accountant.", "They promoted me, I'm now a senior auditor.", "junior accountant", "senior auditor", "What is my job?"),
    Said("title", "I'm a physiotherapist.", "I switched careers from physiotherapist to web developer.", "physiotherapist", "web developer", "What do I do for a living?"),
    Said("status", "The Helios project is in development.", "Quick update on Helios: it is now on hold.", "in development", "on hold", "Where does the Helios project stand?"),
    Said("status", "Our Nimbus app is in beta.", "Nimbus went from in beta to launched.", "in beta", "launched", "What state is Nimbus in?"),
    Said("email", "My email is ana@lumen.example.", "My new email is ana.ribeiro@globex.example.", "ana@lumen.example", "ana.ribeiro@globex.example", "What is my email address?"),
    Said("email", "My email is bo@lumen.example.", "My email is now bo@lumen2.example.", "bo@lumen.example", "bo@lumen2.example", "Which email should you use?"),
    Said("email", "Email me at c.day@acme.example.", "My old address is gone, email me at cday@hey.example.", "c.day@acme.example", "cday@hey.example", "Where do I get email?"),
    Said("city", "I live in Lisbon.", "I moved to Porto last month.", "Lisbon", "Porto", "Where do I live?"),
    Said("city", "I live in Denver.", "We relocated to Austin.", "Denver", "Austin", "Which city do I live in?"),
    Said("city", "I'm based in Madrid.", "I no longer live in Madrid; I live in Seville now.", "Madrid", "Seville", "Where am I based?"),
    Said("city", "I live in Leeds.", "We just moved to Bristol.", "Leeds", "Bristol", "Where do I live now?"),
    Said("city", "I live in Osaka.", "I'm based in Kyoto now.", "Osaka", "Kyoto", "Which city am I in?"),
    Said("employer", "I work at Acme Corp.", "I no longer work at Acme Corp, I work for Globex now.", "Acme Corp", "Globex", "Where do I work?"),
    Said("employer", "I work at Initech.", "I work for Hooli now.", "Initech", "Hooli", "Who is my employer?"),
    Said("employer", "I work for Stark Industries.", "I work at Wayne Enterprises these days.", "Stark Industries", "Wayne Enterprises", "Which company do I work for?"),
    Said("name", "My name is Ana Silva.", "I got married, my name is Ana Costa now.", "Ana Silva", "Ana Costa", "What is my name?"),
    Said("name", "Please call me Bob.", "Please call me Robert.", "Bob", "Robert", "What should you call me?"),
    Said("job", "I'm a data analyst at Acme.", "I'm a product manager at Acme now.", "data analyst", "product manager", "What is my job?"),
    Said("job", "I'm a junior developer at Initech.", "I'm a senior developer at Initech since the review.", "junior developer", "senior developer", "What is my role?"),
    Said("timezone", "My time zone is CET.", "My time zone is PST.", "CET", "PST", "What is my time zone?"),
    Said("timezone", "My time zone is UTC+1.", "My time zone is now UTC+9.", "UTC+1", "UTC+9", "Which time zone am I in?"),
    Said("date", "Our deadline is March 14.", "Our deadline is April 2.", "March 14", "April 2", "When is our deadline?"),
    Said("date", "Our deadline is June 1.", "Our deadline is July 15 now.", "June 1", "July 15", "What is the deadline?"),
    Said("date", "Our release date is June 3.", "Our release date is June 10.", "June 3", "June 10", "When do we release?"),
    Said("preference", "Please reply in Spanish.", "Please reply in German from now on.", "Spanish", "German", "Which language should replies use?"),
    Said("preference", "My favourite color is blue.", "My favourite color is green.", "blue", "green", "What is my favourite color?"),
    Said("preference", "Please contact me by email.", "Please contact me by phone.", "email", "phone", "How should you contact me?"),
    # Slots a later statement replaces: a person the speaker has one of, a typed time zone, the date an
    # event is due, a choice for a purpose, the speaker's systems named without a pronoun.
    Said("person", "My boss is Karen Holt.", "Karen left, my new manager is Idris Bello.", "Karen Holt", "Idris Bello", "Who is my manager?"),
    Said("person", "I report to Olu Adeyemi.", "Since the reorg I have a new team lead, Sofia Marsh.", "Olu Adeyemi", "Sofia Marsh", "Whom do I report to?"),
    Said("person", "My doctor is Hana Novak.", "My new doctor is Pavel Dvorak.", "Hana Novak", "Pavel Dvorak", "Who is my doctor?"),
    Said("timezone", "I'm in the JST time zone.", "After the move I'm on AEST now.", "JST", "AEST", "Which time zone am I in?"),
    Said("timezone", "My hours are in US Central.", "My time zone moved from US Central to Europe/Berlin.", "US Central", "Europe/Berlin", "Which time zone do I work in?"),
    Said("date", "The launch is due on May 5.", "They postponed the launch from May 5 to May 19.", "May 5", "May 19", "When is the launch?"),
    Said("date", "Our migration is scheduled for June 12.", "The migration was moved to July 3.", "June 12", "July 3", "When is the migration?"),
    Said("purpose", "I prefer Poetry for packaging.", "I've switched to uv for packaging.", "Poetry", "uv", "What do I use for packaging?"),
    Said("style", "I prefer concise replies with a summary at the end.", "Change of plan: give me step-by-step explanations.", "concise replies", "step-by-step explanations", "How should answers be written for me?"),
    Said("purpose", "I always use Jest for unit tests.", "Please use Vitest for unit tests from now on.", "Jest", "Vitest", "Which framework should unit tests use?"),
    Said("person", "My colleague Omar reviews my code.", "Lena reviews my pull requests now.", "Omar", "Lena", "Who reviews my code?"),
    Said("product", "Our API framework is Laravel 11.", "We migrated the API to Symfony 7.", "Laravel 11", "Symfony 7", "Which framework is our API built on?"),
    Said("product", "Our servers run on Vultr.", "We moved everything from Vultr to Scaleway.", "Vultr", "Scaleway", "Which cloud are our servers on?"),
    Said("product", "Staging is hosted on Azure.", "Staging is on Hetzner since the migration.", "Azure", "Hetzner", "Where is staging hosted?"),
    Said("product", "The pipelines run on Jenkins.", "CI moved to Buildkite last sprint.", "Jenkins", "Buildkite", "Which CI runs the pipelines?"),
)

# A value the user says they left, in a statement that is not itself read as a fact of the new value:
# the older fact that names the old value expires, and the newer turn is served above the older.
LEFT_BEHIND: tuple[Said, ...] = (
    Said("left", "The storefront is built on Rails 6.1.", "We migrated the storefront to Rails 7.1 over the summer.", "Rails 6.1", "Rails 7.1", "Which Rails version is the storefront on?"),
    Said("left", "Our mobile app is written in Kotlin 1.9.", "The mobile app is on Kotlin 2.0 now, we left Kotlin 1.9 behind.", "Kotlin 1.9", "Kotlin 2.0", "Which Kotlin version is our mobile app in?"),
    Said("left", "My teammate Oskar reviews my pull requests.", "Code reviews moved from Oskar to Hana.", "Oskar", "Hana", "Who reviews my pull requests?"),
    Said("left", "I mostly write Go 1.21 at work.", "We replaced Go 1.21 with Rust for the new services.", "Go 1.21", "Rust", "Which language do I write at work?"),
    Said("left", "Our services run on Node 18.", "All the services run on Node 22 now.", "Node 18", "Node 22", "Which Node version do the services run on?"),
)

SAID_PARAPHRASES: tuple[Said, ...] = (
    Said("city", "I live in Lisbon.", "I'm based in Lisbon.", "Lisbon", "Lisbon", "Where do I live?"),
    Said("city", "I live in New York.", "We are located in new york.", "New York", "new york", "Where do I live?"),
    Said("city", "I moved to Porto.", "I live in Porto.", "Porto", "Porto", "Where do I live?"),
    Said("version", "Our database is PostgreSQL 16.", "Our main database is PostgreSQL 16.", "PostgreSQL 16", "PostgreSQL 16", "Which database do we use?"),
    Said("version", "Our database is PostgreSQL 16.", "We use PostgreSQL 16.", "PostgreSQL 16", "PostgreSQL 16", "Which database do we use?"),
    Said("version", "We're on Ubuntu 24.04.", "My operating system is Ubuntu 24.04.", "Ubuntu 24.04", "Ubuntu 24.04", "Which OS do I use?"),
    Said("phone", "My phone number is +44 20 7946 0001.", "Call me at +442079460001.", "+44 20 7946 0001", "+442079460001", "What is my phone number?"),
    Said("phone", "My phone number is 555-0134.", "You can reach me at 555 0134.", "555-0134", "555 0134", "What is my number?"),
    Said("phone", "My number is 415-555-0123.", "Text me at 415.555.0123.", "415-555-0123", "415.555.0123", "What is my number?"),
    Said("email", "My email is ana@lumen.example.", "Email me at ANA@Lumen.example.", "ana@lumen.example", "ANA@Lumen.example", "What is my email address?"),
    Said("email", "My email is bo@hey.example.", "You can write to bo@hey.example.", "bo@hey.example", "bo@hey.example", "What is my email?"),
    Said("employer", "I work at Acme Corp.", "I work for Acme Corp.", "Acme Corp", "Acme Corp", "Where do I work?"),
    Said("employer", "I work at Globex.", "I am working for GLOBEX.", "Globex", "GLOBEX", "Where do I work?"),
    Said("product", "Our cloud provider is AWS.", "We run everything on AWS.", "AWS", "AWS", "Which cloud do we use?"),
    Said("product", "My editor is Vim.", "I use Vim.", "Vim", "Vim", "Which editor do I use?"),
    Said("name", "My name is Ana Silva.", "Hi, my name is Ana Silva and I need help.", "Ana Silva", "Ana Silva", "What is my name?"),
    Said("date", "Our deadline is March 14.", "The deadline is March 14th.", "March 14", "March 14th", "When is our deadline?"),
    Said("timezone", "My time zone is CET.", "Our time zone is CET.", "CET", "CET", "What is my time zone?"),
    Said("preference", "Please reply in Spanish.", "Answer in Spanish please.", "Spanish", "Spanish", "Which language should replies use?"),
    Said("preference", "Please contact me by email.", "Reach me by email.", "email", "email", "How should you contact me?"),
)

WRITTEN_UPDATES: tuple[Written, ...] = (
    Written("version", "database", "PostgreSQL 15", "PostgreSQL 16", "Our database is {v}.", "Which database do we use?"),
    Written("version", "database_version", "16.1", "16.2", "The database runs version {v}.", "Which database version?"),
    Written("version", "python_version", "3.11", "3.12", "The service runs on Python {v}.", "Which Python version?"),
    Written("version", "api_version", "v2", "v3", "The client calls API {v}.", "Which API version is used?"),
    Written("version", "node_version", "Node.js 18", "Node.js 20", "The frontend builds with {v}.", "Which Node.js?"),
    Written("version", "kernel", "Linux 6.1.0", "Linux 6.1.1", "The servers run {v}.", "Which kernel do the servers run?"),
    Written("number", "team_size", "5", "8", "The team has {v} engineers.", "How many engineers are on the team?"),
    Written("number", "age", "34", "35", "Ana is {v} years old.", "How old is Ana?"),
    Written("number", "seats", "120 seats", "150 seats", "The licence covers {v}.", "How many seats does the licence cover?"),
    Written("number", "floor", "3rd floor", "4th floor", "The office is on the {v}.", "Which floor is the office on?"),
    Written("date", "deadline_date", "2025-06-01", "2025-07-15", "The deadline is {v}.", "When is the deadline?"),
    Written("date", "launch_date", "March 14, 2025", "April 2, 2025", "The launch is on {v}.", "When is the launch?"),
    Written("date", "renewal_date", "1 May 2025", "1 June 2025", "The contract renews on {v}.", "When does the contract renew?"),
    Written("date", "birthday", "March 5", "March 6", "Ana's birthday is {v}.", "When is Ana's birthday?"),
    Written("date", "year_founded", "2019", "2020", "The company was founded in {v}.", "When was the company founded?"),
    Written("email", "email", "ana@lumen.example", "ana@globex.example", "Ana's email address is {v}.", "What is Ana's email?"),
    Written("email", "billing_email", "billing@acme.example", "invoices@acme.example", "Invoices go to {v}.", "Where do invoices go?"),
    Written("email", "support_email", "help@acme.example", "help@acme.example.org", "Support is reached at {v}.", "What is the support address?"),
    Written("phone", "phone", "+44 20 7946 0001", "+44 20 7946 0002", "Ana's phone number is {v}.", "What is Ana's phone number?"),
    Written("phone", "mobile", "+1 415 555 0123", "+1 415 555 0124", "Ana's mobile is {v}.", "What is Ana's mobile?"),
    Written("phone", "office_phone", "555-0134", "555-0143", "The office line is {v}.", "What is the office phone?"),
    Written("url", "website", "https://lumen.example/docs", "https://lumen.example/docs/v2", "The docs live at {v}.", "Where are the docs?"),
    Written("url", "repository", "https://git.example/acme/api", "https://git.example/acme/api-server", "The code is at {v}.", "Where is the repository?"),
    Written("url", "status_page", "status.acme.example", "status.acme.example.com", "The status page is {v}.", "Where is the status page?"),
    Written("amount", "budget", "$5,000", "$6,500", "The monthly budget is {v}.", "What is the monthly budget?"),
    Written("amount", "salary", "€52,000", "€55,000", "Ana earns {v} a year.", "What is Ana's salary?"),
    Written("amount", "price", "£19.99", "£24.99", "The plan costs {v} a month.", "How much does the plan cost?"),
    Written("amount", "credit_limit", "10,000 USD", "12,000 USD", "The credit limit is {v}.", "What is the credit limit?"),
    Written("name", "name", "Ana Silva", "Ana Costa", "Her name is {v}.", "What is her name?"),
    Written("name", "manager", "Tom Baker", "Tom Becker", "Ana's manager is {v}.", "Who is Ana's manager?"),
    Written("name", "account_owner", "John Smith", "Jane Smith", "The account owner is {v}.", "Who owns the account?"),
    Written("employer", "employer", "Acme Corp", "Globex", "Ana works at {v}.", "Where does Ana work?"),
    Written("employer", "company", "Initech", "Initrode", "The customer is {v}.", "Which company is the customer?"),
    Written("city", "city", "Lisbon", "Porto", "Ana lives in {v}.", "Where does Ana live?"),
    Written("city", "location", "Austin, Texas", "Dallas, Texas", "The team is based in {v}.", "Where is the team based?"),
    Written("city", "office", "London", "Londonderry", "The office is in {v}.", "Where is the office?"),
    Written("product", "cloud_provider", "AWS", "GCP", "We host on {v}.", "Which cloud do we use?"),
    Written("product", "plan", "Pro", "Enterprise", "The account is on the {v} plan.", "Which plan is the account on?"),
    Written("product", "editor", "VS Code", "Visual Studio", "Ana writes code in {v}.", "Which editor does Ana use?"),
    Written("product", "timezone", "UTC+1", "UTC+2", "Ana's time zone is {v}.", "What is Ana's time zone?"),
    Written("product", "status", "active", "suspended", "The account is {v}.", "What is the account's status?"),
    Written("product", "job_title", "senior engineer", "staff engineer", "Ana works as a {v}.", "What is Ana's job title?"),
)

WRITTEN_PARAPHRASES: tuple[Written, ...] = (
    Written("version", "database", "PostgreSQL 16", "postgresql 16.", "Our database is {v}.", "Which database?"),
    Written("version", "os", "Ubuntu 24.04", "ubuntu 24.04", "The servers run {v}.", "Which OS?"),
    Written("number", "team_size", "5,000", "5000", "The company employs {v} people.", "How many people?"),
    Written("number", "seats", "twelve", "12", "The licence covers {v} seats.", "How many seats?"),
    Written("date", "deadline_date", "2025-06-01", "1 June 2025", "The deadline is {v}.", "When is the deadline?"),
    Written("date", "launch_date", "March 14, 2025", "14 March 2025", "The launch is on {v}.", "When is the launch?"),
    Written("date", "renewal_date", "June 1st", "1 June", "The contract renews on {v}.", "When does it renew?"),
    Written("email", "email", "ana@lumen.example", "Ana@Lumen.Example", "Ana's email address is {v}.", "Ana's email?"),
    Written("email", "billing_email", "mailto:billing@acme.example", "billing@acme.example", "Invoices go to {v}.", "Invoices?"),
    Written("phone", "phone", "+44 20 7946 0001", "+442079460001", "Ana's phone number is {v}.", "Ana's phone?"),
    Written("phone", "mobile", "(415) 555-0123", "415.555.0123", "Ana's mobile is {v}.", "Ana's mobile?"),
    Written("url", "website", "https://lumen.example/docs/", "https://Lumen.example/docs", "The docs live at {v}.", "Docs?"),
    Written("url", "homepage", "https://www.acme.example", "http://acme.example/", "The homepage is {v}.", "Homepage?"),
    Written("amount", "budget", "$5,000", "$5000", "The monthly budget is {v}.", "Budget?"),
    Written("amount", "price", "USD 20", "$20.00", "The plan costs {v} a month.", "Price?"),
    Written("amount", "salary", "€52k", "52,000 EUR", "Ana earns {v} a year.", "Salary?"),
    Written("name", "employer", "Acme Corp", "ACME Corp.", "Ana works at {v}.", "Employer?"),
    Written("name", "manager", "Tom Baker", "tom  baker", "Ana's manager is {v}.", "Manager?"),
    Written("city", "city", "the Hague", "The Hague", "Ana lives in {v}.", "City?"),
    Written("product", "plan", "the Pro plan", "Pro plan", "The account is on {v}.", "Plan?"),
)

# fmt: on


# --- the probe: one pair written through the API, then asked ------------------------------------------

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
GAP = timedelta(days=7)
CONTEXT_TOKENS = 1000


@dataclass
class Outcome:
    """What the API answers after a pair was written: `updated`, the active facts hold the new value
    and not the old one; `served`, the context holds the new value on a line ahead of every line that
    holds the old one alone (a line that tells the change, "switched from 8.0 to 8.4", holds both and
    counts as the new: it is where a reader learns the update, whether a fact or the turn itself);
    `stale_only`, the context holds the old value without the new; `confirmed` (a paraphrase), one
    fact, never superseded, confirmed by the second statement; `kept`, an active fact still holds the old
    value (what a statement that replaces nothing must leave); `closed`, updated, and the old value was
    read and is held by a fact no longer active (not updated only because the first value was never read)."""

    pair: Said | Written
    updated: bool
    kept: bool
    served: bool
    stale_only: bool
    confirmed: bool
    active: list[str]
    prompt: str
    closed: bool = False

    def describe(self) -> str:
        return f"{self.pair}: active={self.active} prompt={self.prompt!r}"


def kind_id(pair: Any) -> str:
    """A pair's test id: its kind (pytest calls an ids function with every parameter)."""
    return str(getattr(pair, "kind", ""))


def mentions(text: str, value: str) -> int:
    """Where `value` is written in `text` as a whole (case-insensitive), or -1."""
    found = re.search(rf"(?<![\w.@+-]){re.escape(value)}(?![\w@/-]|\.\w)", text, re.IGNORECASE)
    return found.start() if found else -1


class Client(Protocol):
    def get(self, path: str, data: Any = ..., **extra: Any) -> Any: ...
    def post(self, path: str, data: Any = ..., format: str | None = ..., **extra: Any) -> Any: ...  # noqa: A002


def _ok(response: Any) -> Any:
    assert response.status_code in (200, 201), (response.status_code, response.content[:500])
    return response.json()


def _facts(client: Client, subject: str, **filters: str) -> list[dict[str, Any]]:
    return list(_ok(client.get("/v1/facts", {"subject": subject, "limit": 100, **filters}))["results"])


def _outcome(client: Client, pair: Said | Written, subject: str, old: str, new: str) -> Outcome:
    facts = _facts(client, subject, status="any")
    active = [f["value"] for f in facts if f["status"] == "active"]
    context = _ok(
        client.post(
            "/v1/context", {"subject": subject, "query": pair.question, "max_tokens": CONTEXT_TOKENS}, format="json"
        )
    )
    prompt = context["prompt"]
    lines = prompt.splitlines()
    at_new = next((i for i, line in enumerate(lines) if mentions(line, new) >= 0), -1)
    at_old = next((i for i, line in enumerate(lines) if mentions(line, old) >= 0 and mentions(line, new) < 0), -1)
    matching = [f for f in facts if mentions(f["value"], new) >= 0 or mentions(f["value"], old) >= 0]
    kept = any(mentions(v, old) >= 0 for v in active)
    updated = any(mentions(v, new) >= 0 for v in active) and not kept
    return Outcome(
        pair=pair,
        updated=updated,
        kept=kept,
        served=at_new >= 0 and (at_old < 0 or at_new < at_old),
        stale_only=at_old >= 0 and at_new < 0,
        confirmed=len(matching) == 1 and matching[0]["status"] == "active" and matching[0]["confirmation_count"] >= 2,
        active=active,
        prompt=prompt,
        closed=updated and any(f["status"] != "active" and mentions(f["value"], old) >= 0 for f in facts),
    )


def probe_said(client: Client, pair: Said, subject: str, end_session: Callable[[str], None]) -> Outcome:
    """The user says `first` in one session and `then` in the next (a week later); each session is
    ended (`end_session` ends it and lets consolidation finish), then the context is asked."""
    for index, text in enumerate((pair.first, pair.then)):
        session = f"{subject}-s{index}"
        episode = {
            "subject": subject,
            "session": session,
            "kind": "message",
            "role": "user",
            "content": text,
            "occurred_at": (T0 + index * GAP).isoformat(),
        }
        _ok(client.post("/v1/episodes", {"episodes": [episode]}, format="json"))
        end_session(session)
    return _outcome(client, pair, subject, pair.old, pair.new)


def probe_written(client: Client, pair: Written, subject: str) -> tuple[Outcome, list[str]]:
    """Two explicit writes (POST /v1/facts) a week apart; returns the outcome and the two actions."""
    actions = []
    for index, value in enumerate((pair.old, pair.new)):
        body = {
            "subject": subject,
            "entity": subject,
            "attribute": pair.attribute,
            "value": value,
            "statement": pair.statement.format(v=value),
            "confidence": 0.9,
            "valid_from": (T0 + index * GAP).isoformat(),
        }
        actions.append(_ok(client.post("/v1/facts", body, format="json"))["action"])
    return _outcome(client, pair, subject, pair.old, pair.new), actions
