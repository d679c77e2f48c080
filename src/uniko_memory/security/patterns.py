"""The secret rules: one regex per kind, and the checks that keep ordinary prose unmasked.

A rule says which part of a match is the secret: the whole match for a token with a recognisable
prefix (``AKIA…``, ``ghp_…``), or only the value of an assignment (``password: …``), so that the
marker keeps the label readable. Rules are listed most specific first: when two rules claim the
same span, the earlier one names it.

Deliberately *not* secrets: UUIDs, commit hashes and other bare hex or digit strings, phone
numbers, dates, ISBNs and order numbers. A bare hash is masked only as the value of a secret-named
key (``token=…``), a short number only as the value of a PIN key (``PIN: 4471``), and a 13–19 digit
number only when it is Luhn-valid *and* starts like a card.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = [
    "RULES",
    "Rule",
    "card_spans",
    "check_extra_patterns",
    "is_placeholder",
    "looks_random",
    "secret_key_name",
]

#: The shortest value a generic ``token=`` / ``api_key:`` assignment must have to be masked.
GENERIC_MIN_CHARS = 16
#: The Shannon entropy (bits per character) below which a generic value reads as a word, not a key.
GENERIC_MIN_ENTROPY = 3.0

# An assignment: optional closing quote of a JSON key, then ``=``, ``:``, ``:=`` or ``=>``.
_ASSIGN = r"""["']?[ \t]*(?:=>|:=|[:=])[ \t]*"""
# A key that *ends* with a keyword: ``DB_PASSWORD``, ``x-auth-token``, ``client.secret``.
_KEY_PREFIX = r"(?<![\w.\-])[\w.\-]{0,40}?"
#: Password keys: the English words, ``pw`` on its own or after a separator (``db_pw``; not the end of
#: a longer word), and the word in the languages users most often write it in (German ``Passwort`` /
#: ``Kennwort``, Spanish ``contraseña``, Portuguese ``senha``, Dutch ``wachtwoord``, Russian ``пароль``).
_PASSWORD_WORDS = (
    r"(?:password|passwd|passphrase|passcode|pwd|(?<![^\W\d_])pw"
    r"|passwort|kennwort|contrase(?:ñ|n)a|senha|wachtwoord|пароль)"
)
#: Secret-named keys. Besides the named ones, any ``…_key`` / ``…-key`` / ``….key`` (``SERVICE_KEY``,
#: ``license_key``, ``APP_KEY``) and any camelCase ``…Key`` (``clientKey``, ``AccountKey``): the
#: value must still look random (``looks_random``), so ``sort_key=created_at`` stays.
_SECRET_WORDS = (
    r"(?:(?:api|secret|access|auth|private|signing|encryption|master)[_\-]?key|apikey|secret|token"
    r"|[a-z0-9][_.\-]key|(?-i:[a-z0-9]Key))"
)
#: ``…_key`` names that say what the key *indexes*, not what it unlocks: their values are ids, hashes
#: and paths (``sort_key=createdAt2023Desc``, ``cache_key=v2/users/1``, ``public_key=AAAA…``).
_NOT_SECRET_KEY = re.compile(
    r"(?i)(?:sort|partition|primary|foreign|cache|public|idempotency|dedupe?|hot|row|range|hash|routing"
    r"|shard|cluster|lookup|unique|index|composite|natural|surrogate|object|translation|i18n|locale"
    r"|group|message|event)[_.\-]?key$"
)
#: PIN keys: ``PIN``, ``pin_code``, ``PIN number``, ``sim-pin`` (not the end of a word: ``spin``).
_PIN_WORDS = r"(?<![^\W\d_])pin(?:[ _\-]?(?:code|number|no))?"
_VALUE = r"""(?:"(?P<q1>[^"\n]{1,256})"|'(?P<q2>[^'\n]{1,256})'|(?P<bare>[^\s"'`,;]{1,256}))"""

#: Values that say "no secret here": a template (``${DB_PASSWORD}``, ``<password>``, ``{{ pw }}``),
#: an already-masked value (so masking is idempotent), stars. A ``$`` alone does not count.
_PLACEHOLDER = re.compile(r"\[REDACTED:|[<{]|%\(|(?:\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|[*xX•.#?_\-]+)[.,;:!?)]*$")
#: Bare words after ``password:`` that are prose ("Password: must be 8 characters"), not a password.
_PROSE_WORD = re.compile(
    r"(?i)(?:is|was|are|be|must|should|will|can|cannot|could|the|an?|and|or|to|for|of|not|none|null|nil"
    r"|n/?a|required|optional|reset|changed|expired|hidden|empty|same|unknown|policy|field|see|below"
    r"|above|here|there|yes|no|true|false|on|off"
    # The same words after ``Passwort:`` / ``contraseña:`` / ``senha:`` ("Passwort: ist zu kurz").
    r"|ist|war|muss|wird|nicht|kein|keine|leer|vergessen|es|era|debe|vacía|olvidada|é|deve|não"
    r")[.,:!?]?"
)
_PATH = re.compile(r"^(?:~|/|[A-Za-z]:\\)")

# Card brands by prefix: (first digits, allowed lengths). Keeps Luhn-valid order numbers unmasked.
_CARD_BRANDS: tuple[tuple[tuple[int, int], range], ...] = (
    ((4, 4), range(13, 20)),  # Visa (13, 16, 19; any in between is harmless)
    ((51, 55), range(16, 17)),  # Mastercard
    ((2221, 2720), range(16, 17)),  # Mastercard 2-series
    ((34, 34), range(15, 16)),  # Amex
    ((37, 37), range(15, 16)),
    ((6011, 6011), range(16, 20)),  # Discover
    ((644, 649), range(16, 20)),
    ((65, 65), range(16, 20)),
    ((300, 305), range(14, 20)),  # Diners
    ((36, 36), range(14, 20)),
    ((38, 39), range(14, 20)),
    ((3528, 3589), range(16, 20)),  # JCB
    ((62, 62), range(16, 20)),  # UnionPay
    ((50, 50), range(13, 20)),  # Maestro
    ((56, 58), range(13, 20)),
    ((63, 63), range(13, 20)),
    ((67, 67), range(13, 20)),
)
# Runs of digit groups separated by single spaces or dashes, not glued to words, decimals or paths.
_DIGIT_RUN = re.compile(r"(?<![\w+.\-/])\d+(?:[ \-]\d+)*(?![\w/]|[.\-]\d)")
# A card written with dots (``4111.1111.1111.1111``): three to six dotted groups of 3–6 digits,
# taken only as a whole, so a decimal (``4111111111111.11``) or a version is never cut into one.
_DOTTED_RUN = re.compile(r"(?<![\w+.\-/])\d{3,6}(?:\.\d{3,6}){2,5}(?![\w/]|[.\-]\d)")
_GROUP = re.compile(r"\d+")


def is_placeholder(value: str) -> bool:
    return not value.strip() or bool(_PLACEHOLDER.match(value.strip()))


def looks_random(value: str) -> bool:
    """A key-like value: long, at least two of lower/upper/digit, and not word-like in entropy."""
    if len(value) < GENERIC_MIN_CHARS or is_placeholder(value):
        return False
    classes = sum(
        (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
    )
    if classes < 2:
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= GENERIC_MIN_ENTROPY


def _password_value(value: str, key: str) -> bool:
    if is_placeholder(value) or _PROSE_WORD.fullmatch(value):
        return False
    # ``pwd: /home/me`` is the shell's working directory, not a password.
    return not (key.lower().endswith("pwd") and _PATH.match(value))


def _generic_value(value: str, key: str) -> bool:
    """A random-looking value under a secret-named key, unless the key indexes something
    (``sort_key``) or the value is a path (``ssh_key: ~/.ssh/id_ed25519`` names the file)."""
    return looks_random(value) and not _PATH.match(value) and not _NOT_SECRET_KEY.search(key)


def secret_key_name(key: str) -> bool:
    """A whole metadata key that names a secret (``api_token``, ``SERVICE_KEY``; not ``sort_key``)."""
    return SECRET_KEY.fullmatch(key) is not None and not _NOT_SECRET_KEY.search(key)


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


@dataclass(frozen=True)
class Rule:
    """One kind of secret: where it is in a match, and what the masked part must look like."""

    kind: str
    pattern: re.Pattern[str]
    #: Groups holding the secret, first matched wins; empty = the whole match.
    groups: tuple[str, ...] = ()
    #: ``check(value, match)``: False leaves the match unmasked.
    check: Callable[[str, re.Match[str]], bool] | None = None

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        for m in self.pattern.finditer(text):
            group = next((g for g in self.groups if m.group(g) is not None), None) if self.groups else 0
            if group is None:
                continue
            start, end = m.span(group)
            if end > start and (self.check is None or self.check(m.group(group), m)):
                yield start, end


def _rule(
    kind: str, regex: str, *groups: str, check: Callable[[str, re.Match[str]], bool] | None = None
) -> Rule:
    return Rule(kind, re.compile(regex), groups, check)


_VALUE_GROUPS = ("q1", "q2", "bare")

RULES: tuple[Rule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    _rule("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    # A key id lowercased on its way (``key=akia…``): all lowercase, with a digit in its 16 characters.
    # Not ``asia…``: lowercase, that is the start of too many run-together words and hashtags.
    _rule(
        "aws_access_key",
        r"\b(?:akia|abia|acca)[0-9a-z]{16}\b",
        check=lambda v, m: any(c.isdigit() for c in v),
    ),
    _rule(
        "aws_secret_key",
        r"(?i:aws_?secret_?(?:access_?)?key)"
        + _ASSIGN
        + r"""["']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])""",
        "s",
    ),
    _rule("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    _rule("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    _rule("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    _rule(
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        check=lambda v, m: _has_digit_and_letter(v[3:]),
    ),
    _rule("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    # A Twilio API key SID: ``SK`` and 32 hex digits (with a digit and a letter, so not a word).
    _rule(
        "twilio_key",
        r"\bSK[0-9a-fA-F]{32}\b",
        check=lambda v, m: _has_digit_and_letter(v[2:]),
    ),
    # The key of an Azure connection string (storage ``AccountKey=``, Service Bus / Event Hubs
    # ``SharedAccessKey=``): base64, ended by ``;`` or the end of the string.
    _rule(
        "azure_key",
        r"(?i:\b(?:AccountKey|SharedAccessKey)=)(?P<s>[A-Za-z0-9+/]{20,}={0,2})(?![A-Za-z0-9+/=])",
        "s",
        check=lambda v, m: looks_random(v),
    ),
    _rule("slack_token", r"\bxox[abprse]-[A-Za-z0-9\-]{10,}"),
    _rule("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{16,}"),
    _rule("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _rule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    _rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    _rule("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    _rule(
        "url_credentials",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@]{1,256}:(?P<s>[^\s/@]{1,256})@",
        "s",
        check=lambda v, m: not is_placeholder(v),
    ),
    _rule(
        "bearer_token",
        r"(?i)\bauthorization" + _ASSIGN + r"""["']?(?:bearer|token)\s+(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)""",
        "s",
        check=lambda v, m: not is_placeholder(v),
    ),
    _rule(
        "basic_auth",
        r"(?i)\bauthorization" + _ASSIGN + r"""["']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}=*)""",
        "s",
    ),
    _rule(
        "bearer_token",
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/\-]{16,}=*)",
        "s",
        check=lambda v, m: looks_random(v),
    ),
    _rule(
        "password",
        r"(?i)" + _KEY_PREFIX + r"(?P<key>" + _PASSWORD_WORDS + r")" + _ASSIGN + _VALUE,
        *_VALUE_GROUPS,
        check=lambda v, m: _password_value(v, m.group("key")),
    ),
    _rule(
        "pin",
        r"(?i)" + _KEY_PREFIX + _PIN_WORDS + _ASSIGN + r"""["']?(?P<s>\d{4,12})(?!\w|[.\-/:]\d)""",
        "s",
    ),
    # ``base64:`` is the form Laravel writes its ``APP_KEY`` in; the value after it is the secret.
    _rule(
        "generic_secret",
        r"(?i)(?P<key>"
        + _KEY_PREFIX
        + _SECRET_WORDS
        + ")"
        + _ASSIGN
        + r"""["']?(?:base64:)?(?P<s>[A-Za-z0-9_\-./+=~]{16,512})""",
        "s",
        check=lambda v, m: _generic_value(v, m.group("key")),
    ),
)

#: Whole metadata keys that name a secret: their string values are checked like assignments.
PASSWORD_KEY = re.compile(r"(?i)[\w.\-]{0,40}?" + _PASSWORD_WORDS)
SECRET_KEY = re.compile(r"(?i)[\w.\-]{0,40}?" + _SECRET_WORDS)
PIN_KEY = re.compile(r"(?i)[\w.\-]{0,40}?" + _PIN_WORDS)
#: A PIN as a whole metadata value: 4–12 digits.
PIN_VALUE = re.compile(r"\d{4,12}")


def password_value(value: str, key: str) -> bool:
    return _password_value(value, key)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_like(digits: str) -> bool:
    for (lo, hi), lengths in _CARD_BRANDS:
        width = len(str(lo))
        if len(digits) in lengths and lo <= int(digits[:width]) <= hi:
            return _luhn(digits)
    return False


def card_spans(text: str) -> Iterator[tuple[int, int]]:
    """Card numbers: whole digit groups, one separator style, groups of 3+ digits, brand + Luhn."""
    for run in _DOTTED_RUN.finditer(text):
        if _card_like(run.group().replace(".", "")):
            yield run.span()
    for run in _DIGIT_RUN.finditer(text):
        base = run.start()
        groups = [(m.start() + base, m.end() + base) for m in _GROUP.finditer(run.group())]
        i = 0
        while i < len(groups):
            end = _card_at(text, groups, i)
            if end is None:
                i += 1
                continue
            yield groups[i][0], groups[end - 1][1]
            i = end


def _card_at(text: str, groups: list[tuple[int, int]], i: int) -> int | None:
    """The end (exclusive group index) of the longest card starting at group ``i``, if any."""
    a, b = groups[i]
    if b - a >= 13:
        return i + 1 if b - a <= 19 and _card_like(text[a:b]) else None
    if b - a < 3:
        return None
    digits, sep, ends = text[a:b], "", []
    for j in range(i + 1, len(groups)):
        c, d = groups[j]
        between = text[groups[j - 1][1]]
        if d - c < 3 or (sep and between != sep) or len(digits) + d - c > 19:
            break
        sep, digits = between, digits + text[c:d]
        if len(digits) >= 13:
            ends.append((j + 1, digits))
    return next((j for j, digits in reversed(ends) if _card_like(digits)), None)


def check_extra_patterns(patterns: list[str]) -> list[str]:
    """Compile user patterns at config time: a bad or empty-matching regex is a ``ConfigError``."""
    for i, pattern in enumerate(patterns):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"secret_patterns_extra[{i}] {pattern!r} is not a valid regular expression: {exc}"
            ) from None
        if compiled.search("") is not None:
            raise ConfigError(f"secret_patterns_extra[{i}] {pattern!r} matches the empty string")
    return patterns
