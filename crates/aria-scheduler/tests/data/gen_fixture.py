#!/usr/bin/env python3
"""Generates cron_reference.json: fire times from an independent cron implementation.

Reference: cronsim 2.8 from PyPI (https://pypi.org/project/cronsim/, by Pēteris Caune, the
cron engine of healthchecks.io), which mimics Debian's cron, including its daylight-saving
rules and its day-of-month/day-of-week rule. Zones come from Python's zoneinfo reading the
system's tzdata (/usr/share/zoneinfo; the version used is recorded in the output), the same
files aria-scheduler reads through jiff.

Run once, by hand (the tests never download anything):

    python3 -m venv /tmp/cronref && /tmp/cronref/bin/pip install cronsim==2.8
    PYTHONTZPATH=/usr/share/zoneinfo /tmp/cronref/bin/python \
        crates/aria-scheduler/tests/data/gen_fixture.py > crates/aria-scheduler/tests/data/cron_reference.json

For every zone, both 2026 transitions are found by scanning the zone's UTC offset, and for
every expression the fires from 36 hours before to 36 hours after each transition are listed.

Where cronsim and our policy (Debian's/cronie's rules) differ, our policy wins: such
a case would carry `expected` (what we must produce) next to cronsim's raw `reference`, and a
`difference` naming the rule below. The generator knows one candidate and checks for it:

1. A fixed-time job (minute and hour not starting with `*`) with several wall-clock times that
   map to the same instant -- times in a spring-forward gap all run at the first instant after
   the gap, which may itself be a listed time (`0,30 2 * * *`, `0 2,3 * * *` in Berlin). We
   yield each instant once, because a slot is an instant and a job runs once per slot; a
   reference yielding it once per wall-clock time would get `expected` = deduplicated.
   cronsim 2.8 moves its cursor past the gap when it fixes a time up, so it yields the
   instant once too: in the fixture as generated, no case differs.

2. A real-time job whose hour field is a step (`0 */2 * * *`) across Lord Howe's half-hour
   fall-back (2026-04-05, 02:00 +11:00 -> 01:30 +10:30). The wall clock reads 02:00 exactly
   once that night, at 15:30Z (02:00 +10:30); Debian's cron, which compares the wall clock
   every minute, runs the job then, and so do we. cronsim 2.8 skips that instant (it yields
   04:00 next), although it yields 02:00 +10:30 for `0 * * * *`: a quirk of how it advances a
   stepped hour field in real time over a half-hour shift. `expected` adds that instant.

cronsim agrees with cronie where croner (the crate aria-scheduler builds on) does not: a
fixed-time job with a list or range (`0,30 1-3 * * *`) keeps the fixed-time DST rule, and a
day field starting with `*` (`*/2`) makes the day rule AND. Those cases are in the fixture.
"""

import json
import sys
from datetime import datetime, timedelta, timezone
from importlib.metadata import version
from zoneinfo import ZoneInfo

from cronsim import CronSim

ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # half-hour shift
    "Europe/Dublin",  # negative DST in tzdata (winter time is the "daylight" one)
    "America/Santiago",  # southern hemisphere, transitions at midnight
]

EXPRESSIONS = [
    "30 2 * * *",  # fixed, inside the northern spring gap
    "0,30 2 * * *",  # fixed, two times in one gap (see difference 1)
    "0 2,3 * * *",  # fixed, a gap time and the time after the gap
    "10 2 * * *",  # fixed, inside Lord Howe's half-hour gap
    "30 1 * * *",  # fixed, inside northern repeated hours
    "45 1 * * *",  # fixed, inside Lord Howe's repeated half hour
    "0 0 * * *",  # fixed, Santiago's gap at midnight
    "30 23 * * *",  # fixed, Santiago's repeated hour
    "0,30 1-3 * * *",  # fixed by Debian's rule (no leading *), several times
    "15 * * * *",  # wildcard hour: real time, both passes of a repeated hour
    "*/20 * * * *",  # wildcard minute and hour
    "0 */2 * * *",  # stepped hour starts with *: real time
    "@hourly",
    "@daily",
]

# The day rules do not depend on DST; checked in UTC over two months.
DAY_RULES = [
    "0 9 1,15 * MON",  # both restricted: OR
    "0 9 */2 * MON",  # day-of-month starts with *: AND (cronie)
    "0 9 1-7 * */2",  # day-of-week starts with *: AND (cronie)
    "0 9 * * 1-5",
    "0 9 29 2 *",
]


def transitions(zone, year):
    tz = ZoneInfo(zone)
    t = datetime(year, 1, 1, tzinfo=timezone.utc)
    end = datetime(year + 1, 1, 1, tzinfo=timezone.utc)
    step = timedelta(minutes=15)
    found = []
    prev = t.astimezone(tz).utcoffset()
    while t < end:
        n = t + step
        off = n.astimezone(tz).utcoffset()
        if off != prev:
            found.append(n)
            prev = off
        t = n
    return found


# cronsim does not read shortcuts; these are crontab(5)'s meanings.
SHORTCUTS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *"}


def fires(expr, tz, start, end):
    out = []
    for dt in CronSim(SHORTCUTS.get(expr, expr), start.astimezone(tz)):
        if dt.astimezone(timezone.utc) > end:
            break
        out.append(dt.isoformat())
    return out


# Difference 2: instants our policy adds to cronsim's output, by (zone, expr, transition).
ADDED = {
    ("Australia/Lord_Howe", "0 */2 * * *", "2026-04-04T15:00:00Z"): ["2026-04-05T02:00:00+10:30"],
}


def dedupe(xs):
    out = []
    for x in xs:
        # Compare instants, not texts.
        if out and datetime.fromisoformat(out[-1]) == datetime.fromisoformat(x):
            continue
        out.append(x)
    return out


def main():
    with open("/usr/share/zoneinfo/tzdata.zi") as f:
        tzdata = f.readline().strip().removeprefix("# version ")
    cases = []
    for zone in ZONES:
        tz = ZoneInfo(zone)
        for tr in transitions(zone, 2026):
            start = tr - timedelta(hours=36)
            end = tr + timedelta(hours=36)
            for expr in EXPRESSIONS:
                ref = fires(expr, tz, start, end)
                case = {
                    "expr": expr,
                    "zone": zone,
                    "after": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "until": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "transition": tr.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "reference": ref,
                }
                expected = dedupe(ref)
                if expected != ref:
                    case["expected"] = expected
                    case["difference"] = "1: one fire per instant"
                added = ADDED.get((zone, expr, case["transition"]))
                if added:
                    case["expected"] = sorted(
                        expected + added, key=lambda t: datetime.fromisoformat(t)
                    )
                    case["difference"] = "2: the wall clock shows this time once: " + ", ".join(added)
                cases.append(case)
    for expr in DAY_RULES:
        start = datetime(2026, 1, 1, tzinfo=timezone.utc)
        # 29 February needs a leap year; the others need a few months.
        end = datetime(2028 if "29 2" in expr else 2026, 3, 31, tzinfo=timezone.utc)
        cases.append(
            {
                "expr": expr,
                "zone": "UTC",
                "after": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "until": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "reference": fires(expr, ZoneInfo("UTC"), start, end),
            }
        )
    json.dump(
        {
            "source": "cronsim " + version("cronsim") + " (PyPI), gen_fixture.py",
            "tzdata": tzdata,
            "cases": cases,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
