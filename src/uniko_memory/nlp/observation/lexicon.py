"""Every word list the P3 observation rules read, in one place.

Kept apart from the rules so that a list can be read, reviewed and extended without reading the
code that uses it, and so that other layers (recall intent, consolidation slots) can share the
same vocabulary. Everything here is closed-class or general-purpose English (pronouns,
auxiliaries, kinship nouns, discourse fillers) or a spaCy label set; nothing is fitted to a
particular corpus. Each list says in one line why the rules need it.

Over 400 lines on purpose: split by the rule that reads them, the lists shared by several rules
(SUBJ_DEPS, DISCOURSE_LEADERS) would have no home, and near-twins that must stay apart
(WEATHER and WEATHER_VERBS) would no longer be seen side by side.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ABSOLUTE_POSSESSIVES",
    "ACQUISITION_VERBS",
    "ADVERB_OBJECTS",
    "ANIMAL_NOUNS",
    "ARG_DEPS",
    "ARTICLES",
    "ATTITUDE_VERBS",
    "BARE_PREPS",
    "CAUSATIVE_VERBS",
    "CLAUSE_DEPS",
    "COLLECTIVE_NOUNS",
    "CONTRACTIONS",
    "COPULA_FOLLOWERS",
    "COUNTERFACTUAL_MODALS",
    "DEGREE_NOUNS",
    "DISCOURSE_LEADERS",
    "EATEN",
    "EVALUATIVE_VERBS",
    "EVENT_NOUNS",
    "EVENT_OFF_WORDS",
    "EXPLETIVE_HEADS",
    "EXPLETIVE_MARKS",
    "FEELING_WORDS",
    "FEMALE_NOUNS",
    "FIRST_PERSON",
    "HYPOTHETICAL_MODALS",
    "INDEFINITE_PRONOUNS",
    "IRREGULAR_3SG",
    "IRREGULAR_PAST",
    "LIGHT_VERBS",
    "LOCATIVE_ADVERBS",
    "MALE_NOUNS",
    "MANNER_ADVERBS",
    "MODALS",
    "NAME_ENTS",
    "NOMINATIVE",
    "NON_NAME_ENTS",
    "OBJECT_DEPS",
    "PERSON_NOUNS",
    "PLACE_HEADS",
    "PLURAL_FIRST",
    "QUANTIFIER_PRONOUNS",
    "QUESTION_AUX",
    "REJECT_OBJECT_PRONOUNS",
    "ROLE_LABELS",
    "ROLE_RANK",
    "SAME_FORM_PAST",
    "SECOND_PERSON",
    "SPECULATIVE_MODALS",
    "SUBJ_DEPS",
    "TAG_PRONOUNS",
    "TEASER_OBJECTS",
    "THIRD_PERSON",
    "TRIMMABLE",
    "VAGUE_NOUNS",
    "VOCATIVE_CUES",
    "VOLITIONAL_MODALS",
    "WEATHER",
    "WEATHER_VERBS",
    "WH",
]

# ---------------------------------------------------------------------------------- pronouns

#: First person -> form; "we"/"us"/"our" are the speaker alone (the speaker is always part of the
#: group, so the statement stays true of them, only less specific).
FIRST_PERSON: dict[str, str] = {
    "i": "subj",
    "me": "obj",
    "my": "poss",
    "mine": "poss_abs",
    "myself": "refl",
    "we": "subj",
    "us": "obj",
    "our": "poss",
    "ours": "poss_abs",
    "ourselves": "refl",
    "ourself": "refl",
}
#: The plural first person: a group statement ("we all ...") and a lower confidence start here.
PLURAL_FIRST = frozenset({"we", "us", "our", "ours", "ourselves", "ourself"})

#: Second person -> form: the addressee (or nothing to say when there is none).
SECOND_PERSON: dict[str, str] = {
    "you": "subj",
    "your": "poss",
    "yours": "poss_abs",
    "yourself": "refl",
    "yourselves": "refl",
    "ya": "subj",
    "u": "subj",
}

#: Third person pronoun -> (form, kind): which antecedent ("person", "thing", "plural") it can take.
THIRD_PERSON: dict[str, tuple[str, Literal["person", "thing", "plural"]]] = {
    "he": ("subj", "person"),
    "him": ("obj", "person"),
    "his": ("poss", "person"),
    "himself": ("refl", "person"),
    "she": ("subj", "person"),
    "her": ("obj", "person"),  # PRP$ "her" is re-labelled "poss" from the tag
    "hers": ("poss_abs", "person"),
    "herself": ("refl", "person"),
    "it": ("subj", "thing"),
    "its": ("poss", "thing"),
    "itself": ("refl", "thing"),
    "they": ("subj", "plural"),
    "them": ("obj", "plural"),
    "their": ("poss", "plural"),
    "theirs": ("poss_abs", "plural"),
    "themselves": ("refl", "plural"),
}

#: "mine" after "of" ("a buddy of mine"), which the tagger reads as a noun: still a pronoun.
ABSOLUTE_POSSESSIVES = frozenset({"mine", "yours", "ours"})
#: Subject pronouns after which a present verb is finite: only these get third-person agreement.
NOMINATIVE = frozenset({"i", "we", "you", "ya", "u"})
#: Quantifiers that bind a later singular "their" ("everyone has their own story"): no antecedent.
QUANTIFIER_PRONOUNS = frozenset(
    {"everyone", "everybody", "someone", "somebody", "anyone", "anybody", "nobody", "each", "whoever"}
)
#: A whole object made of one of these carries no content ("I love it", "I did that").
REJECT_OBJECT_PRONOUNS = frozenset(
    {"it", "that", "this", "them", "these", "those", "one", "ones", "so", "which", "what"}
)
#: Objects that, under a negation, say there is no one ("is not seeing anyone"): not a reference
#: to resolve, a statement about the subject.
NOBODY_OBJECTS = frozenset({"anyone", "anybody"})
#: Subjects that name nobody in particular ("That is awesome", "someone told me"): no statement.
INDEFINITE_PRONOUNS = frozenset(
    {
        "something", "anything", "everything", "nothing", "someone", "anyone", "everyone", "noone",
        "somebody", "anybody", "everybody", "nobody", "all", "both", "each", "either", "neither",
        "none", "some", "any", "many", "much", "few", "more", "most", "less", "little", "other",
        "others", "another", "such", "whatever", "whoever", "who", "whom", "what", "which", "that",
        "this", "these", "those", "there", "here", "one", "ones", "lot", "lots", "stuff", "thing",
        "things",
    }
)  # fmt: skip
#: Pronouns after an auxiliary that make a tag question ("..., shouldn't I"): cut from the statement.
TAG_PRONOUNS = frozenset({"i", "you", "we", "he", "she", "it", "they", "there"})
#: Chat-role participant ids that are not names: a statement names them by role ("the user's cat").
ROLE_LABELS = {
    "me": "the user",
    "i": "the user",
    "myself": "the user",
    "user": "the user",
    "human": "the user",
    "you": "the assistant",
    "assistant": "the assistant",
}

# ---------------------------------------------------------------------------------- verbs

#: Verbs that say almost nothing without a complement (design §3.3): no statement without one.
LIGHT_VERBS = frozenset({"do", "make", "get", "have", "be", "go", "take", "give", "keep", "let", "come"})
#: Modal auxiliaries -> the predicate prefix they give ("'ll" -> "will_"), contractions included.
MODALS = {"will": "will", "'ll": "will", "’ll": "will", "wo": "will", "would": "would", "'d": "would",
          "’d": "would", "can": "can", "ca": "can", "could": "could", "should": "should",
          "shall": "shall", "might": "might", "may": "may", "must": "must"}  # fmt: skip
#: Modals that open a subject-less chat sentence about the speaker ("Can't wait", "Would love to").
VOLITIONAL_MODALS = frozenset({"can", "could", "would", "will"})
#: Modals of a conditional's consequence ("if I got the job I'd move"): nothing happened.
HYPOTHETICAL_MODALS = frozenset({"would", "could", "might", "'d", "’d"})
#: Modals that, before "have", say what did not happen ("would have moved").
COUNTERFACTUAL_MODALS = frozenset({"would", "could", "should", "might", "may", "must", "'d", "’d"})
#: Modals that say it may not happen even without "have" ("he might come").
SPECULATIVE_MODALS = frozenset({"might"})
#: Auxiliaries that open a question when inverted ("Did you ...", "Can we ...").
QUESTION_AUX = frozenset(
    {"be", "do", "have", "will", "can", "could", "would", "should", "shall", "may", "might", "must"}
)
#: Attitude verbs: a bare present one opens a subject-less chat sentence ("Love seeing your work"),
#: which the parser may read as a noun subject.
ATTITUDE_VERBS = frozenset(
    {"love", "like", "hope", "think", "guess", "feel", "bet", "appreciate", "admire", "adore", "hate", "reckon",
     "wish", "need", "want"}
)  # fmt: skip
#: Verbs by which the subject comes to own their object: "I adopted a cat" makes it the speaker's cat.
ACQUISITION_VERBS = frozenset({"adopt", "buy", "get", "own", "rescue", "inherit", "purchase", "receive"})
#: Causative and perception verbs: the bare verb after their object is not finite ("let you know").
CAUSATIVE_VERBS = frozenset({"let", "make", "help", "have", "see", "watch", "hear", "feel", "bid", "notice"})
#: Heads whose "it" subject is a dummy when a clause or a vague noun follows ("it's great to ...").
EXPLETIVE_HEADS = frozenset({"be", "seem", "feel", "look", "sound", "take", "make", "become", "get"})
#: Evaluative verbs whose "it" is a dummy before a when/if clause ("it sucks when ...").
EVALUATIVE_VERBS = frozenset({"suck", "hurt", "help", "matter", "bother", "annoy", "amaze", "pay", "stink"})
#: Markers of the clause a dummy "it" stands for ("it's great when ...", "it sounds like ...").
EXPLETIVE_MARKS = frozenset({"like", "when", "whenever", "if", "as", "how"})
#: Weather verbs: their "it" is a dummy ("it rained"), never an antecedent's pronoun.
WEATHER = frozenset({"rain", "snow", "pour", "drizzle", "hail"})
#: Weather verbs that may share a dummy "it" subject through coordination ("it's cold and it snows");
#: wider than WEATHER, which decides whether "it" refers at all.
WEATHER_VERBS = frozenset({"rain", "snow", "pour", "drizzle", "hail", "freeze", "thunder"})
#: Verbs whose object is food, not a companion ("eating fish" is no pet).
EATEN = frozenset({"eat", "cook", "order", "fry", "grill", "bake", "serve", "catch", "fish"})
#: Verbs whose past tense is spelled as the base form: the tagger reads "I hurt my ankle last
#: week" as a present (VBP), which agreement would turn into "hurts".
SAME_FORM_PAST = frozenset(
    {"hurt", "put", "cut", "set", "let", "hit", "quit", "shut", "spread", "cost", "burst", "split", "bet"}
    | {"read", "upset", "broadcast", "forecast", "fit", "rid", "shed", "thrust", "bid", "cast"}
)
#: Irregular past forms: never given a third-person "-s" ("forgots", "wents").
IRREGULAR_PAST = frozenset(
    [
        "went", "got", "made", "took", "felt", "came", "saw", "met", "found", "gave", "left", "kept",
        "began", "ran", "won", "bought", "brought", "thought", "told", "became", "sent", "spent",
        "built", "lost", "paid", "sold", "heard", "held", "stood", "wrote", "grew", "flew", "drove",
        "ate", "fell", "broke", "chose", "knew", "rode", "taught", "caught", "said", "sang", "swam",
        "wore", "slept", "learnt", "meant", "did", "had", "was", "were", "forgot", "forgave",
        "understood", "woke", "drank", "spoke", "stole", "threw", "hid", "bit", "shook", "sat", "lay",
        "led", "fed", "fought", "dealt", "dug", "hung", "lit", "sought", "struck", "swore", "tore",
        "wept", "wound", "froze", "began", "rang", "sank", "stuck", "swung",
    ]
)  # fmt: skip
#: Irregular third-person singular presents (regular ones are made by rule).
IRREGULAR_3SG = {"be": "is", "have": "has", "do": "does", "go": "goes", "am": "is", "are": "is"}
#: Contracted or reduced tokens as spaCy splits them -> full form, so statements read in full.
CONTRACTIONS = {
    "'m": "am",
    "’m": "am",
    "'re": "are",
    "’re": "are",
    "'ve": "have",
    "’ve": "have",
    "'ll": "will",
    "’ll": "will",
    "n't": "not",
    "n’t": "not",
    "ca": "can",
    "wo": "will",
    "sha": "shall",
    "gon": "going",
    "wan": "want",
}

# ---------------------------------------------------------------------------------- nouns

#: Occasions that happen on a date: "the trip is off" and "the party is on Friday" say something
#: about them although "be" has no complement (a light verb otherwise).
EVENT_NOUNS = frozenset(
    [
        "visit", "trip", "party", "wedding", "surgery", "operation", "appointment", "meeting",
        "interview", "flight", "concert", "dinner", "lunch", "brunch", "holiday", "vacation", "exam",
        "ceremony", "reunion", "birthday", "match", "game", "housewarming", "launch", "presentation",
        "deadline", "show", "gig", "festival", "conference", "barbecue", "bbq", "picnic", "checkup",
        "check-up", "hearing", "graduation", "funeral", "shower", "recital", "tournament", "race",
        "marathon", "retreat", "move", "move-in", "date", "call", "session", "lesson", "playdate",
        "sleepover", "viewing", "tour", "hike", "camping", "adoption", "booking", "reservation",
        "plan", "plans", "sale", "purchase", "order", "delivery", "treatment", "procedure", "scan",
    ]
)  # fmt: skip
#: What "be" says of an event without a complement: it is cancelled ("the trip is off").
EVENT_OFF_WORDS = frozenset({"off", "cancelled", "canceled", "over"})
#: Singular human nouns that a later he/she can point to (closed, general English).
PERSON_NOUNS = frozenset(
    {
        "mom", "mum", "mother", "dad", "father", "parent", "sister", "brother", "sibling", "son",
        "daughter", "kid", "child", "baby", "husband", "wife", "partner", "boyfriend", "girlfriend",
        "fiance", "fiancee", "spouse", "grandma", "grandmother", "grandpa", "grandfather",
        "grandparent", "grandson", "granddaughter", "grandchild", "aunt", "uncle", "cousin", "niece",
        "nephew", "friend", "buddy", "pal", "roommate", "neighbor", "neighbour", "boss", "coworker",
        "colleague", "teacher", "mentor", "student", "coach", "doctor", "therapist", "counselor",
        "nurse", "man", "woman", "guy", "girl", "boy", "lady", "gentleman", "person", "stepmom",
        "stepdad", "stepmother", "stepfather", "mentee", "classmate", "teammate", "client",
        "customer", "manager", "landlord", "relative", "ex",
    }
)  # fmt: skip
#: Person nouns that settle a "she" between two people ("my mum took my son ... she").
FEMALE_NOUNS = frozenset(
    {
        "mom", "mum", "mother", "sister", "daughter", "wife", "girlfriend", "fiancee", "grandma",
        "grandmother", "granddaughter", "aunt", "niece", "girl", "woman", "lady", "stepmom",
        "stepmother",
    }
)  # fmt: skip
#: Person nouns that settle a "he" between two people.
MALE_NOUNS = frozenset(
    {
        "dad", "father", "brother", "son", "husband", "boyfriend", "fiance", "grandpa",
        "grandfather", "grandson", "uncle", "nephew", "boy", "man", "guy", "gentleman", "stepdad",
        "stepfather",
    }
)  # fmt: skip
#: Animals a later he / she (or it) can point to: "my cat ... she hides under the sofa".
ANIMAL_NOUNS = frozenset(
    {
        "cat", "kitten", "kitty", "dog", "puppy", "pup", "pet", "horse", "pony", "bird", "parrot",
        "rabbit", "bunny", "hamster", "guinea", "turtle", "tortoise", "fish", "snake", "lizard",
        "gecko", "ferret", "chicken", "hen", "goat", "cow", "pig", "sheep", "duck", "mouse", "rat",
    }
)  # fmt: skip
#: Heads of proper names that name a place or an organisation, never a person ("42 Wallaby Lane",
#: "Baker Street", "Northwind Analytics"), whatever the entity tagger says.
PLACE_HEADS = frozenset(
    {
        "lane", "street", "st", "road", "rd", "avenue", "ave", "drive", "boulevard", "blvd", "way",
        "court", "place", "square", "terrace", "crescent", "close", "park", "hill", "heights",
        "mountain", "mount", "lake", "river", "beach", "bay", "island", "valley", "city", "town",
        "county", "state", "province", "hospital", "clinic", "school", "academy", "university",
        "college", "institute", "center", "centre", "cafe", "café", "restaurant", "bar", "pub",
        "hotel", "inn", "airport", "station", "mall", "market", "store", "shop", "church",
        "museum", "gallery", "library", "theater", "theatre", "stadium", "arena", "studio", "gym",
        "inc", "ltd", "llc", "corp", "company", "co", "group", "analytics", "labs", "bank",
    }
)  # fmt: skip
#: Singular nouns for groups of people, which a later "they" points to.
COLLECTIVE_NOUNS = frozenset({"family", "folks", "crew", "team", "gang", "couple", "parents"})
#: Nouns too generic to be a useful antecedent for "it" (and a dummy "it"'s complement).
VAGUE_NOUNS = frozenset(
    {
        "lot", "lots", "thing", "things", "stuff", "time", "times", "way", "ways", "kind", "sort",
        "bit", "day", "days", "week", "weeks", "month", "months", "year", "years", "moment", "today",
        "tonight", "tomorrow", "yesterday", "weekend", "morning", "evening", "night", "afternoon",
        "while", "minute", "hour", "something", "anything", "everything", "nothing", "one",
        "part", "end", "fact", "idea", "reason", "sense", "point", "matter", "case", "luck",
        "spring", "summer", "autumn", "fall", "winter", "season", "holidays", "weekday", "weekdays",
    }
)  # fmt: skip
#: Objects that only announce content ("I have news", "I've got a question"): no statement in them.
TEASER_OBJECTS = frozenset(
    {"news", "update", "question", "something", "stuff", "story", "change", "decision", "announcement",
     "confession"}
)  # fmt: skip
#: Quantity nouns that are adverbial as a whole object ("a lot", "a bit"), not a thing.
DEGREE_NOUNS = frozenset({"lot", "lots", "bit", "ton", "tons", "bunch", "little"})

# ---------------------------------------------------------------------------------- adjectives, adverbs

#: Feelings that say nothing recallable without what they are about ("I'm so happy"); a state of
#: health ("he's fine now" after an injury) is not one of them.
FEELING_WORDS = frozenset(
    {
        "happy", "glad", "sad", "afraid", "scared", "nervous", "excited", "tired", "exhausted",
        "sorry", "upset", "angry", "bored", "stressed",
        "relieved", "thrilled", "proud", "worried", "anxious", "jealous", "curious", "confused",
        "grateful", "thankful", "lucky", "blessed", "busy", "sure", "ready",
    }
)  # fmt: skip
#: Manner adverbs that complete a light verb ("it went well").
MANNER_ADVERBS = frozenset(
    {"well", "badly", "great", "fine", "smoothly", "okay", "ok", "far", "wrong", "right"}
)
#: Place adverbs that complete a light verb and are its object ("went home", "moved abroad").
LOCATIVE_ADVERBS = frozenset({"home", "abroad", "overseas", "downtown", "upstate", "outside", "back"})
#: Adverbs that are a preposition's object ("for now", "until then", "from here"), not a sign of a
#: stranded one ("the studio I go to often").
ADVERB_OBJECTS = frozenset(
    {"now", "then", "later", "here", "there", "ever", "today", "tonight", "tomorrow", "yesterday", "long",
     "once"}
)  # fmt: skip
#: Words after a possessive-tagged "'s" that show it is "is" ("Pottery's a great way", "Lily's so happy").
COPULA_FOLLOWERS = frozenset({"a", "an", "so", "really", "very", "such", "not", "just", "too"})
#: Words just before the addressee's name that make it a vocative ("Thanks, Jon", "hey Jon").
VOCATIVE_CUES = frozenset({"hey", "hi", "hello", "thanks", "yeah", "oh", "wow", "dear"})
#: Words that open a chat sentence without adding content; stripped from the start of a clause.
DISCOURSE_LEADERS = frozenset(
    {
        "oh", "ooh", "ah", "aw", "aww", "wow", "whoa", "yeah", "yea", "yes", "yep", "yup", "no",
        "nope", "well", "so", "and", "but", "plus", "anyway", "anyways", "haha", "lol", "hmm", "um",
        "uh", "ok", "okay", "hey", "hi", "hello", "honestly", "btw", "omg", "gosh", "man", "dude",
        "or", "then", "now", "right", "sure", "totally", "definitely", "absolutely", "actually",
    }
)  # fmt: skip

# ---------------------------------------------------------------------------------- function words

#: Articles a triple part drops ("a big park" -> "big park"): the triple is read without context.
ARTICLES = frozenset({"a", "an", "the"})
#: Prepositions that take a relative date as their object ("since yesterday" -> "since 7 May 2023"),
#: so the date is written bare rather than as "on 7 May 2023".
BARE_PREPS = frozenset(
    {"since", "until", "till", "for", "before", "after", "by", "from", "to", "through", "of", "during", "in",
     "on", "at"}
)  # fmt: skip

# ---------------------------------------------------------------------------------- spaCy labels

#: Subject dependencies: what a clause is about.
SUBJ_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass"})
#: Dependencies of a verb that heads its own clause: "it"/"they" reach only into another clause.
CLAUSE_DEPS = frozenset({"conj", "ccomp", "advcl", "relcl", "parataxis", "csubj", "acl", "xcomp", "pcomp"})
#: Argument dependencies: a noun in one of them is a candidate antecedent.
ARG_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "dative", "oprd", "appos", "conj"})
#: Object positions of a personal pronoun ("him", "them"): never bound to their own clause's subject.
OBJECT_DEPS = frozenset({"dobj", "pobj", "dative", "iobj"})
#: Modifier dependencies that may be cut with an unresolved pronoun in them (never an argument).
TRIMMABLE = frozenset({"advcl", "relcl", "acl", "conj", "parataxis"})
#: Salience of an antecedent by its grammatical role: subject over object over the rest.
ROLE_RANK = {"nsubj": 3, "nsubjpass": 3, "dobj": 2, "attr": 2, "dative": 1, "oprd": 1, "pobj": 1}
#: Wh-tags: a wh-word before an auxiliary opens a question ("What's up").
WH = frozenset({"WP", "WRB", "WDT", "WP$"})
#: Entity labels that are not names (dates, numbers): never an entity of a statement.
NON_NAME_ENTS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
#: Entity labels of names: a sentence-initial word the recogniser reads as one keeps its capital.
NAME_ENTS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART"})
