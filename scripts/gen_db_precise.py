"""Write the PostgreSQL fixture of issue #30 with google-adk 2.13.0's DatabaseSessionService.

Run it through scripts/gen-db-fixtures.sh (it makes the venv and the server). Two sessions of
transcripts/ with timestamps as a live run stamps them (time.time(): full float precision,
not milliseconds); in the second, every other event's `event_data` loses its `timestamp`, so
ADK reads that event's time back from the `timestamp` column (microseconds, naive UTC), as
StorageEvent.to_event does. Writes exports/postgres-precise/<app>/<user>/<id>.session.json:
each session as ADK reads it back (get_session(...).model_dump_json). The shell wrapper then
pg_dumps the database to postgres-precise.sql.
"""

import argparse
import asyncio
import json
import pathlib
import random

import google.adk
from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from sqlalchemy import text

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "db"
SAMPLES = ["09-support-5.session.json", "12-coding-5.session.json"]


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg-url", required=True, help="postgresql+asyncpg:// URL of an empty database")
    args = ap.parse_args()
    assert google.adk.__version__ == "2.13.0", google.adk.__version__
    rng = random.Random(30)
    svc = DatabaseSessionService(args.pg_url)
    written = []
    for n, name in enumerate(SAMPLES):
        d = json.loads((ROOT / "transcripts" / name).read_text())
        s = await svc.create_session(
            app_name="precise_app", user_id=f"user-{n}", state={}, session_id=d["id"]
        )
        t = 1764872345.0 + 1000 * n + rng.random()
        for e in d["events"]:
            ev = Event.model_validate(e)
            t += rng.random() * 7
            ev.timestamp = t
            await svc.append_event(s, ev)
        written.append(s)
    # The second session's odd events: no timestamp in event_data (read from the column).
    async with svc.db_engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE events SET event_data = event_data - 'timestamp' "
                "WHERE session_id = :sid AND id IN (SELECT id FROM events WHERE session_id = :sid "
                "ORDER BY timestamp, id OFFSET 1) "
                "AND (SELECT count(*) FROM events e2 WHERE e2.session_id = :sid "
                "AND (e2.timestamp, e2.id) < (events.timestamp, events.id)) % 2 = 1"
            ),
            {"sid": written[1].id},
        )
    folder = OUT / "exports" / "postgres-precise"
    for s in written:
        got = await svc.get_session(app_name=s.app_name, user_id=s.user_id, session_id=s.id)
        where = folder / s.app_name / s.user_id
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{s.id}.session.json").write_text(
            got.model_dump_json(indent=1, exclude_none=True) + "\n"
        )
    await svc.close()


if __name__ == "__main__":
    asyncio.run(main())
