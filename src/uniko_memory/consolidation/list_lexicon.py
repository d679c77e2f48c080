"""The word lists the compiled-list rules read (``consolidation.lists``): which statements add a
thing of one kind (an activity, an instrument, a pet, a book, a place, an event, a thing made) to
what someone has done or has.

Every list is closed and general English: a word belongs here because of what it means (a sport,
a craft, an instrument, an animal kept as a pet), never because a conversation used it.
"""

from __future__ import annotations

from ..nlp.observation.lexicon import ANIMAL_NOUNS, EVENT_NOUNS

#: Pastimes, sports and crafts, keyed by every form a statement uses, valued by the name the list
#: shows ("went camping", "a camping trip", "camps" -> camping).
ACTIVITIES: dict[str, str] = {
    form: name
    for name, forms in {
        "camping": ("camping", "camp"),
        "hiking": ("hiking", "hike", "hikes", "hiked"),
        "running": ("running", "jogging", "run", "runs", "jog", "jogs"),
        "swimming": ("swimming", "swim", "swims", "swam"),
        "cycling": ("cycling", "biking", "bike ride", "bike rides", "bicycling"),
        "mountain biking": ("mountain biking",),
        "walking": ("nature walk", "nature walks", "walks"),
        "climbing": ("climbing", "rock climbing", "bouldering"),
        "skiing": ("skiing", "ski"),
        "snowboarding": ("snowboarding",),
        "surfing": ("surfing", "surf"),
        "skating": ("skating", "skateboarding", "ice skating"),
        "kayaking": ("kayaking", "canoeing", "rowing", "paddleboarding"),
        "sailing": ("sailing",),
        "fishing": ("fishing",),
        "hunting": ("hunting",),
        "horseback riding": ("horseback riding", "horse riding"),
        "yoga": ("yoga",),
        "pilates": ("pilates",),
        "meditation": ("meditation", "meditating", "meditate"),
        "weightlifting": ("weightlifting", "lifting weights", "strength training"),
        "martial arts": ("martial arts", "karate", "judo", "taekwondo", "kickboxing", "boxing"),
        "dancing": ("dancing", "dance", "dances", "dance classes", "ballet", "salsa"),
        "tennis": ("tennis",),
        "soccer": ("soccer", "football"),
        "basketball": ("basketball",),
        "baseball": ("baseball",),
        "volleyball": ("volleyball",),
        "golf": ("golf", "golfing"),
        "badminton": ("badminton",),
        "table tennis": ("table tennis", "ping pong"),
        "bowling": ("bowling",),
        "chess": ("chess",),
        "board games": ("board games", "board game"),
        "video games": ("video games", "video game", "gaming"),
        "painting": ("painting", "paint", "paints", "painted"),
        "drawing": ("drawing", "sketching", "draw", "sketch"),
        "pottery": ("pottery", "ceramics", "clay"),
        "sculpting": ("sculpting", "sculpture"),
        "photography": ("photography", "taking photos", "taking pictures"),
        "knitting": ("knitting", "crochet", "crocheting"),
        "sewing": ("sewing", "quilting", "embroidery"),
        "woodworking": ("woodworking", "carpentry"),
        "calligraphy": ("calligraphy",),
        "gardening": ("gardening", "garden", "planting"),
        "cooking": ("cooking", "cook"),
        "baking": ("baking", "bake", "bakes", "baked"),
        "reading": ("reading",),
        "writing": ("writing", "journaling", "poetry", "blogging"),
        "singing": ("singing", "sing", "choir", "karaoke"),
        "volunteering": ("volunteering", "volunteer", "volunteers", "volunteered"),
        "traveling": ("traveling", "travelling", "road trip", "road trips", "roadtrip"),
        "birdwatching": ("birdwatching", "bird watching"),
        "stargazing": ("stargazing",),
        "crafts": ("crafting", "arts and crafts", "crafts"),
        "scrapbooking": ("scrapbooking",),
        "beach trips": ("the beach", "beach trip", "beach trips"),
        "museums": ("museum", "museums"),
    }.items()
    for form in forms
}
#: Statements whose verb says the subject does or did it ("went camping", "took up pottery",
#: "loves painting"); a verb outside these (a plan, a wish, another's act) adds nothing.
DOING_VERBS = frozenset(
    {
        "go", "do", "try", "start", "take", "take_up", "pick_up", "join", "sign_up_for", "sign_up",
        "enroll_in", "practice", "practise", "play", "love", "enjoy", "like", "be_into",
        "be_fan_of", "be_big_fan_of", "be_huge_fan_of", "have", "spend", "find", "pick",
        "learn", "attend", "teach", "paint", "draw", "bake", "cook", "swim", "run", "hike",
        "camp", "ride", "dance", "sing", "write", "read", "garden", "knit", "sew", "fish", "surf",
        "ski", "climb", "explore", "get_into", "get_back_into", "keep", "continue", "finish",
        "make", "create", "build", "visit", "see", "watch", "travel", "walk", "head_to", "lead",
        "coach", "train", "compete_in", "race", "win", "enter", "host", "organize", "organise",
    }
)  # fmt: skip
#: Verb words that make a statement a plan, a wish or a hypothesis, not something done or had.
NOT_DONE = frozenset(
    {
        "will", "would", "could", "should", "might", "may", "can", "must", "shall", "want", "wish",
        "hope", "plan", "intend", "aim", "consider", "think", "dream", "wonder", "need", "try_to",
        "going", "gonna", "love_to", "like_to", "be_going", "be_about", "look_to", "look_forward",
        "not", "never", "stop", "quit", "miss", "suggest", "recommend", "encourage", "invite",
        "ask", "tell", "say", "hear", "imagine",
    }
)  # fmt: skip
#: Musical instruments ("plays the violin").
INSTRUMENTS = frozenset(
    {
        "piano", "keyboard", "guitar", "bass", "ukulele", "violin", "viola", "cello", "double bass",
        "harp", "flute", "clarinet", "oboe", "bassoon", "saxophone", "sax", "trumpet", "trombone",
        "tuba", "horn", "french horn", "drums", "drum", "percussion", "harmonica", "accordion",
        "banjo", "mandolin", "organ", "synthesizer", "bagpipes", "recorder", "xylophone",
    }
)  # fmt: skip
#: Animals kept as pets, with the words around them ("a guinea pig", "two cats").
PETS = frozenset(
    ANIMAL_NOUNS - {"pet", "chicken", "hen", "goat", "cow", "pig", "sheep", "duck", "mouse", "rat", "guinea"}
) | {
    "guinea pig",
    "cats",
    "dogs",
    "kittens",
    "puppies",
    "rabbits",
    "hamsters",
    "birds",
    "fish",
    "horses",
}
#: Verbs of having or getting a pet.
PET_VERBS = frozenset(
    {"have", "get", "adopt", "own", "rescue", "take_in", "bring_home", "buy", "welcome", "foster"}
)
#: Verbs of reading a book.
READING_VERBS = frozenset(
    {"read", "finish", "start", "love", "enjoy", "reread", "re-read", "pick_up", "love_read", "be_read"}
)
#: Verbs of being somewhere one travelled to.
TRAVEL_VERBS = frozenset(
    {
        "visit", "go_to", "be_to", "travel_to", "fly_to", "drive_to", "take_trip_to", "be_in", "tour",
        "explore", "go_back_to", "return_to", "head_to", "stay_in", "spend", "vacation_in",
        "holiday_in", "backpack_through", "road_trip_to", "hike_in", "camp_in", "go_camping_in",
    }
)  # fmt: skip
#: Nouns that name an occasion one attends (events, plus the kinds LGBTQ+, school and community
#: life add: a parade, a rally, a meetup).
EVENTS = frozenset(
    EVENT_NOUNS
    - {"move", "move-in", "date", "call", "plan", "plans", "sale", "purchase", "order", "delivery", "booking"}
    - {"reservation", "deadline", "treatment", "procedure", "flight", "surgery", "operation", "hike"}
    - {"camping", "adoption", "visit", "trip", "holiday", "vacation", "appointment", "checkup", "check-up"}
) | {
    "parade",
    "rally",
    "march",
    "protest",
    "meetup",
    "workshop",
    "seminar",
    "class",
    "support group",
    "fundraiser",
    "charity event",
    "exhibition",
    "art show",
    "fair",
    "convention",
    "summit",
    "competition",
    "contest",
    "poetry reading",
    "book club",
    "open mic",
    "play",
    "musical",
    "performance",
    "talk",
    "lecture",
    "speech",
    "camp",
}
#: Verbs of taking part in an occasion.
ATTENDING_VERBS = frozenset(
    {
        "attend", "go_to", "participate_in", "take_part_in", "join", "be_at", "speak_at",
        "perform_at", "volunteer_at", "run", "host", "organize", "organise", "lead", "give",
        "present_at", "compete_in", "enter", "win", "sign_up_for", "register_for", "go",
    }
)  # fmt: skip
#: Verbs of making a thing with one's hands ("painted a sunset", "baked a pie").
MAKING_VERBS = frozenset(
    {
        "paint",
        "draw",
        "sketch",
        "bake",
        "knit",
        "sew",
        "sculpt",
        "carve",
        "craft",
        "build",
        "compose",
        "crochet",
    }
)
#: Leading words a list item drops ("the", "my", "a", "that").
ITEM_LEADS = (
    "the ", "a ", "an ", "my ", "our ", "his ", "her ", "their ", "your ", "that ", "this ", "these ",
    "those ", "some ", "another ", "one ", "two ", "three ", "new ", "first ", "little ",
)  # fmt: skip
