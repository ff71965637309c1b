"""A knowledge-update set, generated deterministically from a seed.

Each conversation is a user talking with an assistant over several sessions. The user states
something about themselves (where they live, whom they work for, their phone number, a project's
status...) and, sessions later, says that it changed; ordinary requests come between and after, and
some conversations mention the same kind of thing about someone else. Each change gives a question
about the current value, whose evidence is the newer statement and whose stale evidence is the older.
Statements, changes and questions each have several phrasings per attribute, and the statement may
stand alone, open a request or come as the answer to the assistant's question, so that the set is not
one pattern.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from evaluation.recall import Conversation, Evidence, Question, Turn


@dataclass(frozen=True)
class Attribute:
    name: str
    values: tuple[str, ...]
    # {v}: the value; changes may also name the old one, {old}.
    states: tuple[str, ...]
    changes: tuple[str, ...]
    questions: tuple[str, ...]
    # The assistant's question that a stated value may answer, and a bare answer.
    asks: str
    answers: tuple[str, ...]
    # The same kind of thing about someone else ({who}, {v}).
    others: tuple[str, ...]


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "city",
        (
            "Lisbon",
            "Denver",
            "Osaka",
            "Leeds",
            "Montreal",
            "Porto",
            "Austin",
            "Krakow",
            "Melbourne",
            "Nairobi",
            "Utrecht",
            "Seville",
            "Calgary",
            "Tallinn",
            "Bristol",
            "Valencia",
        ),
        ("I live in {v}.", "We've been living in {v} for a few years now.", "Home for me is {v} these days."),
        (
            "I moved to {v} last month.",
            "Big news: we relocated from {old} to {v}.",
            "I'm not in {old} anymore, I live in {v} now.",
            "The move is done, my new home is in {v}.",
        ),
        (
            "Which city does the user live in now?",
            "Where am I living these days?",
            "What city is the user currently based in?",
        ),
        "Where are you based?",
        ("In {v}.", "{v}, for now."),
        ("My {who} lives in {v}.", "My {who} just bought a flat in {v}."),
    ),
    Attribute(
        "employer",
        (
            "Acme Robotics",
            "Northwind Bank",
            "Globex",
            "Blue Harbor Labs",
            "Initech",
            "Umbrella Health",
            "Stark Logistics",
            "Pied Piper",
            "Hooli",
            "Vandelay Imports",
            "Wayne Foods",
            "Soylent Energy",
        ),
        ("I work at {v}.", "I'm an engineer at {v}.", "My employer is {v}."),
        (
            "I just started a new job at {v}.",
            "I left {old} and joined {v}.",
            "Quick update: I work for {v} now, no longer {old}.",
            "Today was my first day at {v}.",
        ),
        (
            "Which company does the user work for now?",
            "Where do I work at the moment?",
            "Who is the user's current employer?",
        ),
        "Where do you work?",
        ("At {v}.", "{v}."),
        ("My {who} works at {v}.", "My {who} got an offer from {v}."),
    ),
    Attribute(
        "partner",
        ("Sam", "Priya", "Jonas", "Amara", "Diego", "Mei", "Tomasz", "Lucia", "Noah", "Fatima", "Elliot", "Ines"),
        ("My partner {v} and I are planning a trip.", "I live with my partner, {v}.", "{v}, my partner, loves hiking."),
        (
            "{old} and I split up; I'm seeing {v} now.",
            "I have a new partner, {v}.",
            "Things ended with {old}. My partner now is {v}.",
        ),
        ("What is the name of the user's current partner?", "Who am I dating now?", "Who is the user's partner?"),
        "Who do you live with?",
        ("My partner {v}.",),
        ("My {who} is dating someone called {v}.",),
    ),
    Attribute(
        "diet",
        ("vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "dairy-free", "low-carb", "paleo"),
        ("I eat {v}, so keep that in mind for recipes.", "I follow a {v} diet.", "I'm {v}."),
        (
            "I switched to a {v} diet.",
            "I'm no longer {old}; I'm {v} now.",
            "New year, new habits: I went {v}.",
            "My doctor suggested I go {v}, so I did.",
        ),
        (
            "What diet does the user follow now?",
            "What kind of diet am I on these days?",
            "Which diet should recipes for the user respect?",
        ),
        "Any dietary restrictions I should know about?",
        ("Yes, I'm {v}.", "I eat {v}."),
        ("My {who} is {v}.", "My {who} tried going {v}."),
    ),
    Attribute(
        "car",
        (
            "Toyota Corolla",
            "Honda Civic",
            "Tesla Model 3",
            "VW Golf",
            "Ford Focus",
            "Mazda 3",
            "Kia Niro",
            "Volvo XC40",
            "Subaru Outback",
            "Renault Zoe",
            "Skoda Octavia",
            "Nissan Leaf",
        ),
        ("I drive a {v}.", "My car is a {v}.", "I commute in my {v}."),
        (
            "I sold the {old} and bought a {v}.",
            "I traded in my car; I drive a {v} now.",
            "Picked up my new {v} yesterday.",
            "Goodbye {old}, hello {v}!",
        ),
        ("What car does the user drive now?", "Which car do I have at the moment?", "What is the user's current car?"),
        "What do you drive?",
        ("A {v}.",),
        ("My {who} drives a {v}.", "My {who} is thinking of buying a {v}."),
    ),
    Attribute(
        "phone",
        tuple(
            f"+1 555 {a:03d} {b:04d}"
            for a, b in (
                (201, 3318),
                (417, 9021),
                (630, 1457),
                (812, 6640),
                (349, 2785),
                (958, 4102),
                (274, 8893),
                (563, 3029),
            )
        ),
        ("My phone number is {v}.", "You can reach me at {v}.", "Text me at {v} if anything comes up."),
        (
            "My new phone number is {v}.",
            "I changed numbers: it's {v} now, not {old}.",
            "Please use {v} from now on; the old number is gone.",
            "Update my contact: {v}.",
        ),
        (
            "What is the user's current phone number?",
            "Which number should you use to reach me now?",
            "What phone number does the user have now?",
        ),
        "What's the best number to reach you?",
        ("{v}.", "Call {v}."),
        ("My {who}'s number is {v}.",),
    ),
    Attribute(
        "favourite band",
        (
            "Radiohead",
            "Fleetwood Mac",
            "The National",
            "Daft Punk",
            "Arctic Monkeys",
            "ABBA",
            "Tame Impala",
            "Bon Iver",
            "Queen",
            "Massive Attack",
            "Fontaines D.C.",
            "Khruangbin",
        ),
        ("My favourite band is {v}.", "Nobody beats {v}, they're my favourite band.", "I've loved {v} forever."),
        (
            "These days my favourite band is {v}.",
            "I've moved on from {old}; {v} is my favourite band now.",
            "Honestly {v} has become my favourite band.",
        ),
        (
            "What is the user's favourite band now?",
            "Which band do I like best these days?",
            "Who is the user's current favourite band?",
        ),
        "What music do you like?",
        ("{v}, mostly.",),
        ("My {who} is obsessed with {v}.",),
    ),
    Attribute(
        "favourite food",
        ("ramen", "lasagne", "tacos", "pho", "paella", "sushi", "dumplings", "biryani", "pierogi", "shakshuka"),
        ("My favourite food is {v}.", "I could eat {v} every day.", "Nothing beats a good bowl of {v} for me."),
        (
            "My favourite food these days is {v}.",
            "I'm over {old}; now I'm all about {v}.",
            "My new favourite dish is {v}.",
        ),
        (
            "What is the user's favourite food now?",
            "What dish do I like most at the moment?",
            "Which food does the user love most now?",
        ),
        "What's your comfort food?",
        ("{v}, always.",),
        ("My {who} makes amazing {v}.",),
    ),
    Attribute(
        "project status",
        ("in planning", "in development", "in testing", "on hold", "launched", "cancelled", "in review"),
        ("The Atlas project is {v}.", "Our Atlas project is currently {v}.", "Atlas, my main project, is {v}."),
        (
            "Update on Atlas: it is {v} now.",
            "Atlas moved from {old} to {v}.",
            "The Atlas project is now {v}.",
            "Status change: Atlas is {v} as of this week.",
        ),
        (
            "What is the current status of the user's Atlas project?",
            "Where does my Atlas project stand now?",
            "What state is the Atlas project in now?",
        ),
        "How is your work project going?",
        ("Atlas is {v}.",),
        ("My {who}'s project is {v}.",),
    ),
    Attribute(
        "job title",
        (
            "data analyst",
            "product manager",
            "nurse",
            "teacher",
            "software engineer",
            "architect",
            "accountant",
            "UX designer",
            "pharmacist",
            "sales lead",
        ),
        ("I'm a {v}.", "I work as a {v}.", "My job title is {v}."),
        ("I got promoted; I'm a {v} now.", "I changed careers from {old} to {v}.", "My new role is {v}."),
        ("What is the user's job now?", "What do I do for a living these days?", "What is the user's current role?"),
        "What do you do for work?",
        ("I'm a {v}.",),
        ("My {who} is a {v}.",),
    ),
    Attribute(
        "email",
        tuple(
            f"{n}@{d}"
            for n, d in (
                ("jordan.k", "mailbox.org"),
                ("jk1990", "fastmail.com"),
                ("j.kim", "proton.me"),
                ("jordan", "kimfamily.net"),
                ("jkim.work", "outlook.com"),
                ("kim.jordan", "gmail.com"),
                ("jk", "posteo.de"),
                ("jordan.kim", "icloud.com"),
            )
        ),
        ("My email is {v}.", "Send things to {v}.", "The address I check is {v}."),
        (
            "I switched email addresses: use {v}.",
            "My new email is {v}, not {old}.",
            "Please email me at {v} from now on.",
        ),
        (
            "What is the user's current email address?",
            "Which email should you use for me now?",
            "Where should emails to the user go now?",
        ),
        "What's your email?",
        ("{v}.",),
        ("My {who}'s email is {v}.",),
    ),
    Attribute(
        "gym",
        ("FitHub", "Iron Works", "Pulse Studio", "Summit Climbing", "Blue Lane Pool", "CoreBox", "Zen Yoga Loft"),
        ("I train at {v}.", "I go to {v} three times a week.", "My gym is {v}."),
        ("I cancelled {old} and joined {v}.", "I train at {v} now.", "New gym: {v}."),
        ("Which gym does the user go to now?", "Where do I train these days?", "What gym is the user a member of now?"),
        "Where do you work out?",
        ("At {v}.",),
        ("My {who} goes to {v}.",),
    ),
)

WHO = ("sister", "brother", "colleague", "neighbour", "cousin", "friend Alex", "mother", "flatmate")

REQUESTS = (
    "Can you suggest a {dish} recipe for {n} people?",
    "What's a good way to learn {skill} in my spare time?",
    "I need a packing list for a {days}-day trip to {place}.",
    "Could you explain how {topic} works in simple terms?",
    "Help me write a short thank-you note to my {who}.",
    "What are some {adj} books to read on a rainy weekend?",
    "Give me three ideas for a {adj} birthday present.",
    "How long should I boil {food}?",
    "Can you draft an agenda for a {n}-person meeting about {topic}?",
    "Any tips for sleeping better when it's {weather}?",
    "Remind me how to convert {n} miles to kilometres.",
    "What should I plant in my garden in {month}?",
    "Summarise the pros and cons of {topic} for me.",
    "I'm bored. Suggest a {adj} hobby.",
)
REPLIES = (
    "Sure! Here are a few ideas to get you started: {a}, {b} and {c}.",
    "Good question. In short: start small, keep it regular, and review what worked after a week.",
    "Here's a simple plan: first {a}, then {b}, and finally {c}.",
    "Happy to help. Most people find that {a} works best, with {b} as a backup.",
    "Got it. I'd go with {a}; if that doesn't suit you, try {b}.",
    "Noted, thanks for telling me.",
)
ACKS = (
    "Thanks for letting me know!",
    "Noted, I'll keep that in mind.",
    "Got it, I've updated my notes.",
    "Congratulations on the change!",
    "Thanks, good to know.",
)
FILL = {
    "dish": ("lentil", "mushroom", "pasta", "curry", "soup", "salad", "risotto"),
    "skill": ("Spanish", "watercolour painting", "chess", "guitar", "touch typing", "statistics"),
    "place": ("the coast", "the mountains", "Iceland", "Rome", "a cabin", "Scotland"),
    "topic": ("compound interest", "heat pumps", "vaccines", "solar panels", "index funds", "remote work"),
    "who": ("aunt", "teacher", "neighbour", "mentor", "team"),
    "adj": ("cosy", "unusual", "thoughtful", "cheap", "creative", "relaxing"),
    "food": ("eggs", "rice", "potatoes", "quinoa", "broccoli"),
    "weather": ("hot", "humid", "noisy outside", "cold"),
    "month": ("April", "June", "September", "March"),
    "a": ("a short daily routine", "a checklist", "a timer", "a notebook", "a friend to keep you honest"),
    "b": ("an online course", "a weekend workshop", "a library book", "a podcast"),
    "c": ("a small reward", "a monthly review", "a shared calendar", "a walk afterwards"),
}


def _fill(rng: random.Random, template: str, **given: str) -> str:
    values = {k: rng.choice(v) for k, v in FILL.items()} | {
        "n": str(rng.randint(2, 12)),
        "days": str(rng.randint(2, 14)),
    }
    return template.format(**(values | given))


@dataclass
class _Plan:
    attribute: Attribute
    old: str
    new: str
    stated: tuple[int, int]  # (session, user turn slot)
    changed: tuple[int, int]


def generate(*, seed: int = 18, conversations: int = 200) -> list[Conversation]:
    """`conversations` conversations of subject `upd-<n>`, each with one or two changed attributes."""
    master = random.Random(seed)
    out = []
    for n in range(conversations):
        rng = random.Random(master.getrandbits(64))
        out.append(_conversation(rng, f"upd-{n:03d}"))
    return out


def _conversation(rng: random.Random, subject: str) -> Conversation:
    sessions = rng.randint(3, 4)
    # User turns per session; three leave room for two statements and a distractor in one session.
    slots = [rng.randint(3, 5) for _ in range(sessions)]
    chosen = rng.sample(ATTRIBUTES, 2 if rng.random() < 0.35 else 1)
    plans: list[_Plan] = []
    taken: set[tuple[int, int]] = set()
    for attribute in chosen:
        old, new = rng.sample(attribute.values, 2)
        first = rng.randint(0, sessions - 2)
        later = rng.randint(first + 1, sessions - 1)
        stated = _free_slot(rng, first, slots[first], taken, last_ok=False)
        # At least one user turn after the change, in its session or a later one.
        changed = _free_slot(rng, later, slots[later], taken, last_ok=later < sessions - 1)
        plans.append(_Plan(attribute, old, new, stated, changed))
    other_slot = None
    if rng.random() < 0.5:
        where = rng.randint(0, sessions - 1)
        other_slot = _free_slot(rng, where, slots[where], taken, last_ok=True)
    start = datetime(2025, 1, 6, 9, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 300))
    turns: list[Turn] = []
    ids: dict[tuple[str, str], str] = {}
    day = start
    for s in range(sessions):
        session = f"{subject}:s{s + 1}"
        # Sessions days apart, each starting some time into its day.
        day += timedelta(days=rng.randint(2, 20))
        when = day + timedelta(minutes=rng.randint(0, 600))
        for slot in range(slots[s]):
            user_text, reply = _request(rng)
            for plan in plans:
                if (s, slot) == plan.stated:
                    user_text, reply = _statement(rng, plan, turns, session)
                    ids[(plan.attribute.name, "old")] = f"{session}:t{len(turns) + 1}"
                elif (s, slot) == plan.changed:
                    template = rng.choice(plan.attribute.changes)
                    text = template.format(v=plan.new, old=plan.old)
                    user_text = text if rng.random() < 0.5 else f"{text} {_request(rng)[0]}"
                    reply = rng.choice(ACKS)
                    ids[(plan.attribute.name, "new")] = f"{session}:t{len(turns) + 1}"
            if (s, slot) == other_slot:
                attribute = plans[0].attribute
                third = rng.choice([v for v in attribute.values if v not in (plans[0].old, plans[0].new)])
                user_text = rng.choice(attribute.others).format(who=rng.choice(WHO), v=third)
                reply = rng.choice(ACKS)
            turns.append(Turn(f"{session}:t{len(turns) + 1}", "user", user_text, when, session))
            when += timedelta(minutes=1)
            turns.append(Turn(f"{session}:t{len(turns) + 1}", "assistant", reply, when, session))
            when += timedelta(minutes=1)
    questions = []
    for index, plan in enumerate(plans):
        questions.append(
            Question(
                subject,
                index,
                rng.choice(plan.attribute.questions),
                plan.attribute.name,
                (Evidence(ids[(plan.attribute.name, "new")], None, plan.new),),
                (Evidence(ids[(plan.attribute.name, "old")], None, plan.old),),
            )
        )
    return Conversation(subject, turns, questions)


def _free_slot(
    rng: random.Random, session: int, count: int, taken: set[tuple[int, int]], *, last_ok: bool
) -> tuple[int, int]:
    top = count - 1 if last_ok else count - 2
    free = [(session, k) for k in range(0, top + 1) if (session, k) not in taken]
    pick = rng.choice(free)
    taken.add(pick)
    return pick


def _request(rng: random.Random) -> tuple[str, str]:
    return _fill(rng, rng.choice(REQUESTS)), _fill(rng, rng.choice(REPLIES))


def _statement(rng: random.Random, plan: _Plan, turns: list[Turn], session: str) -> tuple[str, str]:
    """The first statement, in one of three shapes: alone, opening a request, or answering the
    assistant's question (which then comes as the turn before)."""
    attribute = plan.attribute
    shape = rng.randrange(3)
    if shape == 2 and turns and turns[-1].session == session and turns[-1].speaker == "assistant":
        last = turns[-1]
        turns[-1] = Turn(last.external_id, last.speaker, f"{last.text} {attribute.asks}", last.when, last.session)
        return rng.choice(attribute.answers).format(v=plan.old), rng.choice(ACKS)
    text = rng.choice(attribute.states).format(v=plan.old)
    if shape == 1:
        return f"{text} {_request(rng)[0]}", _fill(rng, rng.choice(REPLIES))
    return text, rng.choice(ACKS)
