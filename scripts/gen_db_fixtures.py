"""Write the database fixtures of issue #15 with google-adk's own session services.

Run it through scripts/gen-db-fixtures.sh (it makes the venv and the PostgreSQL server).
Writes, under tests/fixtures/db/:
  sqlite_service.db    SqliteSessionService          (sqlite:///...)
  database_service.db  DatabaseSessionService, v1    (sqlite+aiosqlite:///...)
  v0.db                DatabaseSessionService on ADK's old v0 tables (pickled actions)
  exports/<service>/<app>/<user>/<session id>.session.json   each session as ADK reads it back
                       (get_session(...).model_dump_json), for the equality tests
and, with --pg-url, fills that PostgreSQL database through DatabaseSessionService and
writes exports/postgres/ (the shell wrapper then pg_dumps it to postgres.sql).
"""

import argparse
import asyncio
import json
import os
import pathlib
import sys

import google.adk
from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "db"

# (transcript, user override): two support sessions share one user so the filters have
# something to tell apart; the others keep the transcript's own app and user.
SAMPLES = [
    ("15-support-2.session.json", None),
    ("33-support-2.session.json", "user-2089"),
    ("25-support-5.session.json", None),
    ("31-support-4.session.json", None),
    ("04-coding-2.session.json", None),
    ("18-coding-7.session.json", None),
]


def load_samples():
    out = []
    for name, user in SAMPLES:
        d = json.loads((ROOT / "transcripts" / name).read_text())
        out.append(
            {
                "app": d["app_name"],
                "user": user or d["user_id"],
                "id": d["id"],
                "state": d.get("state") or {},
                "events": [Event.model_validate(e) for e in d["events"]],
            }
        )
    return out


async def fill(service, samples):
    for s in samples:
        session = await service.create_session(
            app_name=s["app"], user_id=s["user"], state=s["state"], session_id=s["id"]
        )
        for e in s["events"]:
            await service.append_event(session, e.model_copy(deep=True))


async def export(service, samples, folder: pathlib.Path):
    for s in samples:
        got = await service.get_session(app_name=s["app"], user_id=s["user"], session_id=s["id"])
        # <app>/<user>/<id>: the files sort as the database's URL#app/user/id sources do.
        where = folder / s["app"] / s["user"]
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{s['id']}.session.json").write_text(
            got.model_dump_json(indent=1, exclude_none=True) + "\n"
        )


async def write_v0(path: pathlib.Path, samples):
    """ADK's v0 tables (events.actions pickled), written by DatabaseSessionService itself:
    it keeps using the v0 classes on a database whose events table has `actions`."""
    from sqlalchemy import create_engine
    from google.adk.sessions.schemas import v0

    engine = create_engine(f"sqlite:///{path}")
    v0.Base.metadata.create_all(engine)
    engine.dispose()

    svc = DatabaseSessionService(f"sqlite+aiosqlite:///{path}")
    await fill(svc, samples[:1])
    await svc.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg-url", help="postgresql+asyncpg:// URL of an empty database")
    args = ap.parse_args()
    assert google.adk.__version__ == "2.13.0", google.adk.__version__
    samples = load_samples()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ["sqlite_service.db", "database_service.db", "v0.db"]:
        (OUT / name).unlink(missing_ok=True)

    svc = SqliteSessionService(f"sqlite:///{OUT / 'sqlite_service.db'}")
    await fill(svc, samples)
    await export(svc, samples, OUT / "exports" / "sqlite_service")
    await svc.close()

    svc = DatabaseSessionService(f"sqlite+aiosqlite:///{OUT / 'database_service.db'}")
    await fill(svc, samples)
    await export(svc, samples, OUT / "exports" / "database_service")
    await svc.close()

    if args.pg_url:
        svc = DatabaseSessionService(args.pg_url)
        await fill(svc, samples)
        await export(svc, samples, OUT / "exports" / "postgres")
        await svc.close()

    await write_v0(OUT / "v0.db", samples)
    print(f"wrote {len(samples)} sessions with google-adk {google.adk.__version__}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
