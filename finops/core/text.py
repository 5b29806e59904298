"""Text Postgres can store and compare, and names safe to put in an email, a CSV file or an HTTP header.

A NUL byte is refused by Postgres text types (a DataError), and a lone
surrogate (from a JSON `\\udxxx` escape) cannot be encoded to UTF-8: a name with either names nothing, so a lookup by
it answers "unknown" instead of reaching the database (fuzzing found both as 500s)."""


def storable(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)


# Names reach emails (a Subject header), CSV files and HTTP headers: a CR or LF there adds a line (a forged header, a
# row that is not one), NUL and the other C0/C1 controls corrupt or vanish. Every write path of a name refuses them
# through `name_check` (services, so the pages, the API and apply_config) or `control_character` (ingest readers,
# whose error names the row). U+2028/U+2029 break lines in many viewers, so they count too.
CONTROL_NAMES = {
    "\n": "a line feed",
    "\r": "a carriage return",
    "\x00": "a NUL",
    "\t": "a tab",
    "\u2028": "a line separator",
    "\u2029": "a paragraph separator",
}


def control_character(text: str) -> str | None:
    """The first control character in `text`, described and located ("a line feed (U+000A) at character 7"), or
    None when there is none."""
    for position, char in enumerate(text, start=1):
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F or char in "\u2028\u2029":
            kind = CONTROL_NAMES.get(char, "a control character")
            return f"{kind} (U+{code:04X}) at character {position}"
    return None


def name_check(text: str) -> None:
    """Raise a ValidationError naming the control character in `text`, if any."""
    found = control_character(text)
    if found:
        from django.core.exceptions import ValidationError

        raise ValidationError(
            f"Contains {found}; names appear in emails, CSV files and HTTP headers, so control "
            "characters (line breaks, tabs, NUL, the C0 and C1 ranges) are refused."
        )
