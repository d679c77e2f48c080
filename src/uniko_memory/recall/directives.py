"""Questions about how the assistant should behave: the turn that set the rule comes first.

"Which dataframe library are your examples supposed to use for me?" is answered by one short turn
months back ("from now on use polars instead of pandas in your examples"), while a dozen long
assistant answers about dataframes fit the question's words better. When a question asks about
the assistant's own conduct (it names the assistant, "you" / "your", together with a word of duty,
permission, request or style: "should", "supposed to", "allowed", "asked", "format", ...) or about
the asker's taste ("Which editor would I prefer?"), the best candidates whose text gives a standing
instruction or states a preference ("always ...", "never ...", "from now on ...", "please keep ...",
"I prefer ...", "I'd rather ...") rank higher: a reorder among the best, never a filter.

Both patterns are closed, general English: how people phrase a rule for someone who works for them
and a taste of their own, never words of one conversation.
"""

from __future__ import annotations

import re

from ..model import Message, Observation
from .fusion import Candidate, by_fused

#: The question names the assistant ...
_YOU = re.compile(r"\b(you|your|yours)\b", re.IGNORECASE)
#: ... and asks what it must, may or was asked to do, or how it should shape a reply.
_CONDUCT = re.compile(
    r"\b(should|must|supposed|expected|meant|allowed|okay|ok|permitted|need to|have to|has to|"
    r"ask|asked|tell|told|instruct|instructed|request|requested|rule|rules|always|never|format|formatted|style|how long|"
    r"how many|language|units?|tone|length|when i (say|type|write|send|ask))\b",
    re.IGNORECASE,
)
#: The asker's own taste: "would I like", "do I prefer", "my favourite".
_TASTE = re.compile(
    r"\b((would|do|did|will) i (like|prefer|want|enjoy|choose|pick|rather)|i('d| would) (like|prefer|want|rather)|"
    r"my (favou?rite|preferred|preference)|i (prefer|like|love|hate|dislike|avoid))\b",
    re.IGNORECASE,
)
#: A turn that sets a standing rule for its listener.
_RULE = re.compile(
    r"\b(always|never|from now on|going forward|from here on|in future|in the future|whenever|"
    r"every time|each time|make sure|do not|don't|stop|avoid|please (use|keep|give|put|explain|write|"
    r"include|add|answer|reply|respond|format|show|stick|limit|mark|quote|list|start|end|call|send|"
    r"remind|check|skip|no)|instead of|rather than|new rule|one rule|one request|only)\b",
    re.IGNORECASE,
)
#: A turn that states its speaker's taste.
_PREFERENCE = re.compile(
    r"\b(i (really )?(prefer|like|love|enjoy|hate|dislike|can't stand|cannot stand|avoid)|"
    r"i'd rather|i would rather|my (favou?rite|preferred|go-to)|i'm (a big fan|not a fan|into)|"
    r"i am (a big fan|not a fan)|works best for me|suits me)\b",
    re.IGNORECASE,
)


def asks_about_conduct(query: str) -> bool:
    """Whether ``query`` asks how the assistant should behave or what the asker would like."""
    return bool(_YOU.search(query) and _CONDUCT.search(query)) or bool(_TASTE.search(query))


def states_a_rule_or_taste(text: str) -> bool:
    return bool(_RULE.search(text) or _PREFERENCE.search(text))


#: Senders that are the assistant itself (the integrations' ``assistant_id`` default, chat roles):
#: its advice ("always back up first") is no rule the user set.
ASSISTANT_NAMES = frozenset({"assistant", "ai", "bot", "model", "system", "agent", "chatbot"})
#: A rule is set in a turn of at most this many words; a longer one is an answer or a story.
MAX_RULE_WORDS = 150


def _rule_text(node: object) -> str | None:
    if isinstance(node, Message):
        if node.sender_name.strip().casefold() in ASSISTANT_NAMES:
            return None
        return node.content
    if isinstance(node, Observation):
        return node.content
    return None


def favour_directives(ranked: list[Candidate], boost: float, top_n: int) -> list[Candidate]:
    """The best ``top_n`` turns and statements that give a standing instruction or a preference:
    fused x (1 + boost)."""
    if boost <= 0:
        return ranked
    lifted = False
    for c in ranked[:top_n]:
        text = _rule_text(c.node)
        if text and len(text.split()) <= MAX_RULE_WORDS and states_a_rule_or_taste(text):
            c.fused *= 1.0 + boost
            lifted = True
    return by_fused(ranked) if lifted else ranked
