"""How figures read, in one place: pages, CSVs, charts and reports all format through these functions.

Two registers (issue 9): *exact* where finance reads (tables: "$1,043.12", "1,403"), *compact* where people
glance (cards and chart axes: "$1.2k", "3.4B"). Unknown is never zero: a cost of None reads "—", and the
tokens nobody could price are shown beside it. One unit letter per scale everywhere: k, M, B (billions), T.
Pure functions of their arguments (the currency defaults to the reporting currency); no ORM here.
"""

import datetime as dt
import re
from decimal import ROUND_HALF_EVEN, Decimal

from django.conf import settings

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "¥", "INR": "₹", "KRW": "₩"}
SCALES = ((Decimal(10) ** 12, "T"), (Decimal(10) ** 9, "B"), (Decimal(10) ** 6, "M"), (Decimal(10) ** 3, "k"))
DASH = "—"
NO_MODEL = "(no model: taxes, credits, fees)"
UNATTRIBUTED = "Unattributed"
CENT = Decimal("0.01")
# CSV money: providers bill to at most micro-units (Bedrock's FOCUS rows carry 6 decimals, OpenAI's cost API
# fewer), so 6 places keeps every billed digit; sums in NUMERIC(38, 18) otherwise print 18+ digits of FX noise.
CSV_PLACES = 6


def reporting_currency() -> str:
    return settings.FINOPS_REPORTING_CURRENCY


def currency_symbol(currency: str | None = None) -> str:
    """ "$" for USD; the ISO code and a space where no symbol is unambiguous ("CHF ")."""
    currency = currency or reporting_currency()
    return SYMBOLS.get(currency, f"{currency} ")


def _with_symbol(text: str, negative: bool, currency: str | None) -> str:
    return f"{'-' if negative else ''}{currency_symbol(currency)}{text}"


def _compact(magnitude: Decimal) -> str | None:
    for size, suffix in SCALES:
        if magnitude >= size:
            return f"{magnitude / size:.1f}{suffix}"
    return None


def cents(value) -> Decimal:
    """An amount rounded to the cent as money_exact shows it: what a totals row adds up (round once, then add)."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_EVEN)


def money_exact(value, currency: str | None = None) -> str:
    """ "$1,043.12"; a non-zero amount under a cent reads "<$0.01" (never "$0.00"); None reads "—"."""
    if value is None or value == "":
        return DASH
    amount = Decimal(value)
    rounded = amount.quantize(CENT, rounding=ROUND_HALF_EVEN)
    if amount and not rounded:
        return f"{'>-' if amount < 0 else '<'}{currency_symbol(currency)}0.01"
    return _with_symbol(f"{abs(rounded):,.2f}", rounded < 0, currency)


def left_out_text(left_out: dict, *, services: int | None = None) -> str:
    """What a FOCUS import left out (IngestRun.left_out), exact: "left out 1,958 rows, $41,250.23: Amazon EC2
    $18,002.10, Amazon S3 $9,120.00, Oracle: Compute $12.00 (another provider)"; "" when nothing was.
    `services`: name at most that many, the largest, and count the rest."""
    if not left_out or not left_out.get("rows"):
        return ""
    entries = left_out.get("services", [])
    totals: dict[str, Decimal] = {}
    for entry in entries:
        totals[entry["currency"]] = totals.get(entry["currency"], Decimal(0)) + Decimal(entry["cost"])
    total = " + ".join(money_exact(amount, currency) for currency, amount in sorted(totals.items()))
    shown = entries if services is None else entries[:services]
    parts = [
        f"{entry['service']} {money_exact(entry['cost'], entry['currency'])}"
        + ("" if entry["reason"] == "not LLM inference" else f" ({entry['reason']})")
        for entry in shown
    ]
    if len(entries) > len(shown):
        parts.append(f"{len(entries) - len(shown)} more")
    rows = left_out["rows"]
    return f"left out {rows:,} row{'' if rows == 1 else 's'}, {total}: {', '.join(parts)}"


def money_compact(value, currency: str | None = None) -> str:
    """ "$1.2k", "$3.4M"; under a thousand, exact to the cent."""
    if value is None or value == "":
        return DASH
    amount = Decimal(value)
    text = _compact(abs(amount))
    if text is None:
        return money_exact(amount, currency)
    return _with_symbol(text, amount < 0, currency)


def forecast(value, currency: str | None = None, *, compact: bool = False) -> str:
    """A finops.forecast.projection.Forecast as every page states it: "forecast $95,012.40 (range
    $91,200.00–$98,800.00)";
    "no forecast (not enough history)" without one."""
    if value is None or value.total is None:
        return "no forecast (not enough history)"
    return f"forecast {forecast_figures(value.total, value.low, value.high, currency, compact=compact)}"


def forecast_figures(total, low, high, currency: str | None = None, *, compact: bool = False) -> str:
    """ "$95,012.40 (range $91,200.00–$98,800.00)": a forecast's figures (emails keep them as decimal strings)."""
    money = money_compact if compact else money_exact
    if low in (None, "") or high in (None, "") or Decimal(low) == Decimal(high):
        return money(total, currency)
    return f"{money(total, currency)} (range {money(low, currency)}–{money(high, currency)})"


def tokens_compact(value) -> str:
    """ "3.4B", "340.0M", "12.5k"; under a thousand, the count itself."""
    if value is None:
        return DASH
    number = int(value)
    text = _compact(Decimal(abs(number)))
    if text is None:
        return f"{number:,}"
    return f"-{text}" if number < 0 else text


def count(value) -> str:
    """Thousands separators: "1,403"."""
    return DASH if value is None else f"{int(value):,}"


def requests(value) -> str:
    """Request counts: sources that do not report them (FOCUS, usage CSVs) sum to 0, which means unknown."""
    return DASH if not value else f"{int(value):,}"


def _ratio_text(value, signed: bool) -> str:
    rounded = (Decimal(value) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    if not rounded:
        return "0.0 %"  # never "-0.0 %" nor "+0.0 %"
    return f"{rounded:+.1f} %" if signed else f"{rounded:.1f} %"


def percent_change(value) -> str:
    """A signed change or variance: "+12.5 %", "-3.0 %", "0.0 %"."""
    return DASH if value is None else _ratio_text(value, signed=True)


def share(value) -> str:
    """A part of a whole: 0.1234 → "12.3 %"."""
    return DASH if value is None else _ratio_text(value, signed=False)


def per_outcome(value, currency: str | None = None) -> str:
    """A cost per outcome: "$0.42", "$12.50"; under ten cents up to four decimals ("$0.0042") so a cheap outcome
    never reads "$0.00"; None (no outcomes, or unknown cost) reads "—"."""
    if value is None or value == "":
        return DASH
    amount = Decimal(value)
    if amount and abs(amount) < Decimal("0.1"):
        rounded = amount.quantize(Decimal("0.0001"), rounding=ROUND_HALF_EVEN)
        if not rounded:
            return f"<{currency_symbol(currency)}0.0001"
        return price(rounded, currency)
    return money_exact(amount, currency)


def price(value, currency: str | None = None) -> str:
    """A unit price: two decimals, more only where the price has them (up to 4): "$15.00", "$0.075"."""
    if value is None or value == "":
        return DASH
    amount = Decimal(value)
    places = max(2, min(4, -amount.normalize().as_tuple().exponent))
    return _with_symbol(f"{abs(amount):,.{places}f}", amount < 0, currency)


def per_mtok(value, currency: str | None = None) -> str:
    """Cost per million tokens, a computed ratio, always to 3 decimals so a column lines up: "$1.250/M",
    "$0.092/M" (two would show a $0.0915/M model as $0.09)."""
    if value is None:
        return DASH
    amount = Decimal(value)
    return _with_symbol(f"{abs(amount):,.3f}", amount < 0, currency) + "/M"


def duration(value) -> str:
    """ "44 ms", "1.2 s", "2 min 3 s", "1 h 5 min"; a timedelta or seconds."""
    if value is None:
        return DASH
    seconds = value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 10:
        return f"{seconds:.1f}".removesuffix(".0") + " s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def latency_ms(value) -> str:
    """A latency given in milliseconds, read like any duration: "840 ms", "1.2 s"; None reads "—"."""
    return DASH if value is None else duration(float(value) / 1000)


def latency_change_ms(value) -> str:
    """A change of latency in milliseconds, signed: "+120 ms", "-1.5 s", "0 ms"."""
    if value is None:
        return DASH
    ms = round(float(value))
    if not ms:
        return "0 ms"
    return f"{'+' if ms > 0 else '-'}{duration(abs(ms) / 1000)}"


def points_change(value) -> str:
    """A change of a rate in percentage points (the value is in points): "+0.30 pt", "-1.25 pt", "0.00 pt"."""
    if value is None:
        return DASH
    rounded = Decimal(value).quantize(CENT, rounding=ROUND_HALF_EVEN)
    return "0.00 pt" if not rounded else f"{rounded:+.2f} pt"


def rate(value) -> str:
    """A speed such as output tokens per second, whole: "1,024"; None reads "—"."""
    return DASH if value is None else f"{Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_EVEN):,}"


def score(value, *, signed: bool = False) -> str:
    """An eval score as posted, to at most 3 decimals ("0.912", "87.5"); `signed` for a change ("+0.012")."""
    if value is None or value == "":
        return DASH
    rounded = Decimal(value).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN).normalize()
    if not rounded:
        return "0"
    text = format(rounded, "f")
    return f"+{text}" if signed and rounded > 0 else text


def tokens_per_second(value) -> str:
    """An output speed: "1,012 tok/s", "34 tok/s"."""
    return DASH if value is None else f"{rate(value)} tok/s"


def seconds(value) -> str:
    """A per-request latency to a tenth of a second: "44.1 s", "0.6 s", "1,250.0 s" (what-if, issue 13); "—"."""
    if value is None or value == "":
        return DASH
    return f"{Decimal(value).quantize(Decimal('0.1'), rounding=ROUND_HALF_EVEN):,} s"


def day(value) -> str:
    """A day as people write it: "3 November 2026" (emails, sentences); None reads "—"."""
    if value is None or value == "":
        return DASH
    value = dt.date.fromisoformat(value) if isinstance(value, str) else value
    return f"{value.day} {value:%B %Y}"


def utc_time(value) -> str:
    """A moment as people read it, in UTC: "3 November 2026, 14:05 UTC"; None reads "—"."""
    if value is None or value == "":
        return DASH
    value = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    value = value.astimezone(dt.UTC) if value.tzinfo else value
    return f"{day(value.date())}, {value:%H:%M} UTC"


def days_count(value: int) -> str:
    """ "today", "1 day", "12 days": a count of days in a sentence."""
    return "today" if value == 0 else f"{value:,} day{'' if value == 1 else 's'}"


def csv_decimal(value, places: int = CSV_PLACES) -> str:
    """A plain decimal for CSV: rounded half-even to `places`, trailing zeros dropped down to cents, no exponent."""
    if value is None or value == "":
        return ""
    text = format(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN), "f")
    if "." in text:
        whole, frac = text.split(".")
        frac = frac.rstrip("0").ljust(2, "0")
        text = f"{whole}.{frac}"
    return "0.00" if text in ("-0.00",) else text


# --- names people read instead of ids ---

# Words that are written in capitals or a set way in model names; others are capitalised.
_WORDS = {
    "gpt": "GPT",
    "oss": "OSS",
    "o1": "o1",
    "o3": "o3",
    "o4": "o4",
    "glm": "GLM",
    "qwen": "Qwen",
    "kimi": "Kimi",
    "llama": "Llama",
    "deepseek": "DeepSeek",
    "claude": "Claude",
    "gemini": "Gemini",
    "nova": "Nova",
    "mistral": "Mistral",
    "mini": "mini",
    "nano": "nano",
    "turbo": "Turbo",
    "it": "IT",
    "ft": "FT",
    "r1": "R1",
    "v3": "V3",
    "vl": "VL",
}
_SIZE = re.compile(r"^\d+(\.\d+)?[bmk]$", re.IGNORECASE)  # 8b, 120b, 70B → parameter counts in capitals


def model_name(model_id: str | None) -> str:
    """A readable name for a normalised model id: "claude-sonnet-4-5" → "Claude Sonnet 4.5",
    "gpt-5-mini" → "GPT-5 mini", "openai/gpt-oss-120b" → "GPT OSS 120B". The id itself stays available
    (CSV, titles); "" is the no-model group of non-usage charges."""
    if model_id is None:
        return DASH
    if model_id == "":
        return NO_MODEL
    name = model_id.rsplit("/", 1)[-1]
    words: list[str] = []
    for part in re.split(r"[-_ ]", name):
        if not part:
            continue
        if part.isdigit() and words and re.search(r"\d$", words[-1]) and len(part) <= 2:
            words[-1] += f".{part}"  # 4-5 → 4.5 (a version split by the id's dashes)
        elif part.lower() in _WORDS:
            words.append(_WORDS[part.lower()])
        elif _SIZE.match(part):
            words.append(part.upper())
        elif part[0].isdigit():
            words.append(part)
        else:
            words.append(part[0].upper() + part[1:])
    text = " ".join(words)
    return re.sub(r"^GPT (\d)", r"GPT-\1", text)
