"""Text Postgres can store and compare. A NUL byte is refused by Postgres text types (a DataError), and a lone
surrogate (from a JSON `\\udxxx` escape) cannot be encoded to UTF-8: a name with either names nothing, so a lookup by
it answers "unknown" instead of reaching the database (fuzzing found both as 500s)."""


def storable(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)
