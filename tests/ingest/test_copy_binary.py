"""Binary COPY built from columns (ingest/copy_binary.py, issue 23): what Postgres stores from it is what it stores
from the same values sent as text — amounts rounded to the column's scale alike, byte for byte (numeric_send) —
and what it refuses as text it refuses in binary."""

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import psycopg
import pyarrow as pa
import pytest
from django.db import connection, transaction

from ingest import copy_binary as binary

# Amounts as the writers give them (str of a Decimal): more fraction digits than NUMERIC(38, 18) keeps (rounded half
# away from zero, as numeric_in rounds), halves at the 19th digit, exponent notation (str writes a Decimal under
# 10⁻⁶ so), negatives, zeros written several ways, the largest amount the column holds, and NULL.
AMOUNTS = [
    "0",
    "0.0",
    "0E-10",
    "1E-7",
    "1.5E+3",
    "-2.5E-19",
    "12",
    "0.5",
    "-3.25",
    "10000",
    "9999.9999",
    "123456789.123456789123456789",
    "0.0000000000000000005",
    "0.0000000000000000015",
    "-0.0000000000000000015",
    "0.0000000000000000004999",
    "99999999999999999999.999999999999999999",
    "0.000123456789012345678901234567",
    None,
]
COLUMNS = "amount numeric(38, 18), at timestamptz, cells bigint[], name varchar(12), count bigint, label text"


def _random_amounts(rng: random.Random, n: int) -> list:
    amounts = []
    for _ in range(n):
        if rng.random() < 0.1:
            amounts.append(None)
            continue
        value = Decimal(rng.randint(0, 10 ** rng.randint(1, 38))) / Decimal(10) ** rng.randint(0, 45)
        while abs(value) >= 10**20:
            value /= 10**7
        amounts.append(str(-value if rng.random() < 0.1 else value))
    return amounts


def _stored(cursor, table: str) -> list:
    cursor.execute(
        f"SELECT numeric_send(amount), amount::text, at, cells, name, count, label FROM {table} ORDER BY n"  # noqa: S608
    )
    return cursor.fetchall()


# numerics aligns amounts on their decimal point when none has more than 48 digits either side (every cost a file
# gives); a longer one sends the whole column digit by digit: both ways are held to the text.
@pytest.mark.parametrize("longest", ["", "0." + "3" * 49 + "5"], ids=["aligned", "digit-by-digit"])
def test_values_sent_in_binary_are_stored_as_the_same_values_sent_as_text(db, longest):
    rng = random.Random(23)
    amounts = AMOUNTS + _random_amounts(rng, 3000) + ([longest] if longest else [])
    plain = pa.array([format(Decimal(a), "f") for a in amounts if a is not None], pa.string())
    assert (binary._numerics_aligned(plain) is None) == bool(longest)
    n = len(amounts)
    hours = np.array([rng.randint(0, 1_000_000) for _ in range(n)], dtype=np.int64)  # 1970 to 2084
    counts = np.array([rng.randint(0, 6) for _ in range(n)], dtype=np.int64)
    cells = np.array([rng.randint(-(2**63), 2**63 - 1) for _ in range(int(counts.sum()))], dtype=np.int64)
    names = [rng.choice(["", "gpt-4o", "Zoë", "🚀 rocket", 'a"b,c\\d', "tab\tline\n"]) for _ in range(n)]
    whole = np.array([rng.randint(-(2**63), 2**63 - 1) for _ in range(n)], dtype=np.int64)
    with connection.cursor() as cursor:
        for table in ("by_text", "by_binary"):
            cursor.execute(f"CREATE TEMP TABLE {table} (n serial, {COLUMNS})")
        starts = np.cumsum(counts) - counts
        with cursor.cursor.copy("COPY by_text (amount, at, cells, name, count, label) FROM STDIN") as copy:
            for i in range(n):
                copy.write_row(
                    (
                        amounts[i],
                        dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=int(hours[i])),
                        [int(c) for c in cells[starts[i] : starts[i] + counts[i]]] or None,
                        names[i],
                        int(whole[i]),
                        "the same",
                    )
                )
        rows = binary.rows(
            [
                binary.field_count(6),
                binary.numerics(pa.array(amounts, pa.string())),
                binary.fixed(binary.timestamptz_us(hours * 3600)),
                binary.bigint_arrays(cells, counts),
                binary.texts(pa.array(names, pa.string())),
                binary.fixed(whole, binary.text("the same")),
            ]
        )
        with cursor.cursor.copy(
            "COPY by_binary (amount, at, cells, name, count, label) FROM STDIN (FORMAT binary)"
        ) as copy:
            copy.write(binary.SIGNATURE)
            copy.write(rows)
            copy.write(binary.TRAILER)
        by_text, by_binary = _stored(cursor, "by_text"), _stored(cursor, "by_binary")
    assert len(by_binary) == n
    assert by_binary == by_text
    assert [row[1] for row in by_binary[: len(AMOUNTS)]] == [
        *["0.000000000000000000"] * 3,
        "0.000000100000000000",
        "1500.000000000000000000",
        "0.000000000000000000",  # -2.5E-19 rounds to zero
        "12.000000000000000000",
        "0.500000000000000000",
        "-3.250000000000000000",
        "10000.000000000000000000",
        "9999.999900000000000000",
        "123456789.123456789123456789",
        "0.000000000000000001",  # a half at the 19th digit rounds away from zero
        "0.000000000000000002",
        "-0.000000000000000002",
        "0.000000000000000000",
        "99999999999999999999.999999999999999999",
        "0.000123456789012346",
        None,
    ]


@pytest.mark.parametrize(
    ("amount", "name", "error"),
    [
        ("100000000000000000000", "fits", psycopg.errors.NumericValueOutOfRange),  # 10^20: NUMERIC(38, 18) holds less
        ("-99999999999999999999.9999999999999999995", "fits", psycopg.errors.NumericValueOutOfRange),  # rounds to it
        ("1", "thirteen long", psycopg.errors.StringDataRightTruncation),  # varchar(12)
    ],
)
def test_what_postgres_refuses_as_text_it_refuses_in_binary(db, amount, name, error):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE one (amount numeric(38, 18), name varchar(12))")
        with pytest.raises(error), transaction.atomic():
            with cursor.cursor.copy("COPY one (amount, name) FROM STDIN") as copy:
                copy.write_row((amount, name))
        with pytest.raises(error), transaction.atomic():
            with cursor.cursor.copy("COPY one (amount, name) FROM STDIN (FORMAT binary)") as copy:
                copy.write(binary.SIGNATURE)
                copy.write(
                    binary.rows(
                        [
                            binary.field_count(2),
                            binary.numerics(pa.array([amount], pa.string())),
                            binary.texts(pa.array([name], pa.string())),
                        ]
                    )
                )
                copy.write(binary.TRAILER)


@pytest.mark.parametrize("text", ["1,5", "--1", "1.2.3", "0x10", "NaN", "Infinity", "1e5x", ".5", ""])
def test_an_amount_that_is_not_a_plain_decimal_number_is_refused_before_postgres(text):
    with pytest.raises(ValueError, match="numerics"):
        binary.numerics(pa.array([text], pa.string()))
