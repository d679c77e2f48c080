"""The word lists the slot rules read (``consolidation.slots``): which statements name the one
value an attribute holds at a time, so that a newer value can supersede an older one.

Every list is closed and general English: a word belongs here because of what it means (a diet,
an occasion that has a date, a job), never because a conversation used it.
"""

from __future__ import annotations

from ..nlp.observation.lexicon import EVENT_NOUNS

#: Predicates (normalised, particles joined) that say where someone lives: one home at a time.
RESIDENCE_PREDICATES = frozenset(
    {
        "live_in",
        "live_at",
        "live_near",
        "move_to",
        "move_back_to",
        "move_into",
        "relocate_to",
        "settle_in",
        "be_based_in",
        "be_settled_in",
        "reside_in",
    }
)
#: Predicates that say who someone works for.
EMPLOYER_PREDICATES = frozenset(
    {
        "work_at",
        "work_for",
        "work_with",
        "be_employed_by",
        "be_employed_at",
        "be_hired_by",
        "get_hired_by",
        "get_hired_at",
        "start_at",
        "start_work_at",
        "start_work_for",
        "start_working_at",
        "start_working_for",
        "join",
    }
)
#: Objects of "work at" that are a place or a time, not an employer ("works at home").
NOT_EMPLOYERS = frozenset({"home", "night", "nights", "weekend", "weekends", "the moment", "moment", "last"})
#: Predicates that name a job title.
JOB_PREDICATES = frozenset(
    {
        "work_as",
        "start_work_as",
        "start_working_as",
        "promote_to",
        "be_promoted_to",
        "get_promoted_to",
        "be_hired_as",
        "hire_as",
        "start_as",
        "train_as",
        "retrain_as",
        "be_now",
    }
)
#: Job and role nouns: "X is a nurse" names X's job; "X became a manager" a new one.
JOB_NOUNS = frozenset(
    [
        "accountant",
        "actor",
        "actress",
        "analyst",
        "architect",
        "artist",
        "assistant",
        "attorney",
        "baker",
        "barista",
        "bartender",
        "carpenter",
        "cashier",
        "chef",
        "cleaner",
        "clerk",
        "coach",
        "consultant",
        "cook",
        "counselor",
        "counsellor",
        "courier",
        "dentist",
        "designer",
        "developer",
        "director",
        "doctor",
        "driver",
        "economist",
        "editor",
        "electrician",
        "engineer",
        "farmer",
        "firefighter",
        "freelancer",
        "gardener",
        "hairdresser",
        "intern",
        "janitor",
        "journalist",
        "judge",
        "lawyer",
        "lecturer",
        "librarian",
        "manager",
        "mechanic",
        "midwife",
        "musician",
        "nanny",
        "nurse",
        "officer",
        "painter",
        "paramedic",
        "pharmacist",
        "photographer",
        "physician",
        "physiotherapist",
        "pilot",
        "plumber",
        "police",
        "policeman",
        "policewoman",
        "postman",
        "producer",
        "professor",
        "programmer",
        "psychologist",
        "receptionist",
        "reporter",
        "researcher",
        "salesman",
        "saleswoman",
        "scientist",
        "secretary",
        "singer",
        "soldier",
        "student",
        "supervisor",
        "surgeon",
        "tailor",
        "teacher",
        "technician",
        "therapist",
        "translator",
        "tutor",
        "vet",
        "veterinarian",
        "waiter",
        "waitress",
        "writer",
        "ceo",
        "cto",
        "cfo",
        "founder",
        "cofounder",
        "co-founder",
        "owner",
        "principal",
        "paralegal",
        "radiologist",
        "sommelier",
    ]
)
#: Predicates of a partner relationship ("is dating Sam", "married Jo").
PARTNER_PREDICATES = frozenset(
    {
        "date",
        "be_dating",
        "see",
        "be_seeing",
        "be_married_to",
        "marry",
        "get_married_to",
        "be_engaged_to",
        "get_engaged_to",
        "be_in_a_relationship_with",
        "be_together_with",
        "move_in_with",
    }
)
#: Predicates that end a relationship: the partner slot then holds "single".
BREAKUP_PREDICATES = frozenset(
    {
        "break_up",
        "break_up_with",
        "split_up",
        "split_up_with",
        "split",
        "divorce",
        "get_divorced",
        "leave",
        "dump",
    }
)
#: Relationship states named by "be" ("is single", "got married").
RELATIONSHIP_STATES = frozenset(
    {
        "single",
        "married",
        "engaged",
        "divorced",
        "separated",
        "widowed",
        "in a relationship",
        "seeing someone",
    }
)
#: Diets: one at a time ("is vegetarian", "went vegan", "is pescatarian now").
DIETS = frozenset(
    [
        "vegetarian",
        "vegan",
        "pescatarian",
        "pescetarian",
        "keto",
        "paleo",
        "gluten-free",
        "dairy-free",
        "lactose-free",
        "flexitarian",
        "carnivore",
        "omnivore",
        "plant-based",
        "halal",
        "kosher",
        "low-carb",
        "sugar-free",
        "raw-vegan",
    ]
)
#: Predicates that give someone a diet ("is vegan", "went vegetarian", "switched to keto").
DIET_PREDICATES = frozenset(
    {
        "be",
        "be_now",
        "become",
        "go",
        "turn",
        "switch_to",
        "change_to",
        "stay",
        "go_back_to",
        "start_be",
        "be_still",
    }
)
#: Words around a diet that change nothing ("strictly vegan now").
DIET_ADVERBS = frozenset(
    {"now", "again", "strictly", "fully", "mostly", "completely", "still", "full", "time", "full-time"}
)
#: Predicates that stop something ("quit smoking", "gave up meat").
CESSATION_PREDICATES = frozenset({"stop", "quit", "give_up", "cut_out", "cut_down_on", "kick"})
#: Drinks: what someone drinks, prefers or switched to.
DRINKS = frozenset(
    [
        "coffee",
        "tea",
        "espresso",
        "latte",
        "cappuccino",
        "americano",
        "matcha",
        "decaf",
        "chai",
        "cocoa",
        "beer",
        "wine",
        "whisky",
        "whiskey",
        "vodka",
        "gin",
        "rum",
        "cider",
        "soda",
        "cola",
        "juice",
        "water",
        "kombucha",
        "lemonade",
        "smoothie",
        "smoothies",
        "milk",
        "oat-milk",
        "herbal",
        "green-tea",
        "black-tea",
    ]
)
#: Occasions that happen on a date, which can move or be cancelled (the extractor keeps "the trip
#: is off" and "the party is on Friday" for them).
EVENTS = EVENT_NOUNS
#: A person's own verb for an event ("Leo is visiting on ..." is Leo's visit).
EVENT_VERBS = {"visit": "visit", "fly": "flight", "travel": "trip", "arrive": "visit", "come": "visit"}
#: Predicates that put an event on a date ("moved to", "is on", "rescheduled for").
DATE_PREDICATES = frozenset(
    [
        "be",
        "be_on",
        "be_at",
        "be_set_for",
        "be_scheduled_for",
        "be_planned_for",
        "be_booked_for",
        "be_moved_to",
        "be_pushed_to",
        "be_rescheduled_to",
        "be_rescheduled_for",
        "be_postponed_to",
        "be_postponed_until",
        "be_changed_to",
        "be_now",
        "move",
        "move_to",
        "reschedule",
        "reschedule_to",
        "reschedule_for",
        "postpone",
        "postpone_to",
        "postpone_until",
        "push",
        "push_to",
        "push_back",
        "push_back_to",
        "bring_forward",
        "bring_forward_to",
        "change",
        "change_to",
        "set",
        "schedule",
        "plan",
        "take_place",
        "happen",
        "start",
        "begin",
        "land",
        "arrive",
        "come",
    ]
)
#: Predicates that cancel an event: its date slot then holds "cancelled".
CANCEL_PREDICATES = frozenset(
    [
        "cancel",
        "call_off",
        "be_cancelled",
        "be_called_off",
        "be_off",
        "scrap",
        "be_scrapped",
        "drop",
        "be_dropped",
        "get_cancelled",
        "get_called_off",
    ]
)
#: Words that say a value changed or stopped ("anymore", "switched", "now"): a preference or
#: habit is replaced only when the newer statement says so.
CHANGE_CUES = frozenset(
    [
        "now",
        "anymore",
        "nowadays",
        "instead",
        "switched",
        "switch",
        "switching",
        "changed",
        "change",
        "moved",
        "new",
        "newly",
        "actually",
        "lately",
        "recently",
        "since",
        "started",
        "start",
        "stopped",
        "quit",
        "gave",
        "these",
        "days",
        "longer",
    ]
)
#: Phrases that say a habit or state stopped: "no longer", "not ... anymore", "stopped", "quit".
CESSATION_PHRASES = ("no longer", "anymore", "any more", "not any longer", "these days not")
#: Things counted in a "how many" slot: "has two cats", "has 3 kids".
NUMBER_WORDS = {
    "no": 0,
    "zero": 0,
    "one": 1,
    "a": 1,
    "an": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
}
#: Relatives and roles in an apposition ("Maya's brother Leo" is Leo).
RELATION_NOUNS = frozenset(
    [
        "brother",
        "sister",
        "mother",
        "father",
        "mom",
        "mum",
        "dad",
        "son",
        "daughter",
        "wife",
        "husband",
        "partner",
        "girlfriend",
        "boyfriend",
        "fiance",
        "fiancee",
        "fiancé",
        "fiancée",
        "friend",
        "colleague",
        "coworker",
        "co-worker",
        "boss",
        "manager",
        "neighbour",
        "neighbor",
        "cousin",
        "aunt",
        "uncle",
        "niece",
        "nephew",
        "grandma",
        "grandpa",
        "grandmother",
        "grandfather",
        "roommate",
        "flatmate",
        "housemate",
        "mate",
        "buddy",
        "stepson",
        "stepdaughter",
        "stepmother",
        "stepfather",
        "sister-in-law",
        "brother-in-law",
        "mother-in-law",
        "father-in-law",
        "teammate",
        "classmate",
    ]
)
