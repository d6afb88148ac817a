"""The operator's models at start (catalog/engines.served_ids): each of $TTS_APP_MODELS downloaded into the Hugging
Face cache and loaded, then each other model the operator chose loaded, one after another on a background thread,
while the embedded voice serves. A failure is one line in the log and on the page (``FetchJob.line``); the app goes
on serving what it has. No request loads a model (catalog/engines.engine_for)."""

from __future__ import annotations

import logging
import threading
from typing import Optional

from tts_app.catalog.engines import ModelLoadFailed, ModelUnavailable, load_model, served_ids
from tts_app.catalog.fetch_jobs import FetchJob, FetchStatus, add_job, requested_models
from tts_app.models.available import EMBEDDED_ID, POCKET_MODEL_IDS
from tts_app.models.hub_fetch import FetchError, Plan, fetch

logger = logging.getLogger(__name__)


def _fetch_and_load(job: FetchJob) -> None:
    def planned(plan: Plan) -> None:
        job.plan = plan

    try:
        if job.stage != "loading":  # a model of $TTS_APP_MODELS: downloaded first
            job.stage = "downloading"
            if job.model_id in POCKET_MODEL_IDS:
                from tts_app.models.pocket_tts.fetch import fetch_pocket  # yaml and the Pocket TTS config: only when named

                fetched = fetch_pocket(model_id=job.model_id, on_plan=planned)
                folder, job.short = fetched.folder, fetched.refused
            else:
                folder = fetch(job.model_id, on_plan=planned)
            logger.info("%s downloaded to %s; loading it", job.model_id, folder)
            job.stage = "loading"
        load_model(job.model_id)  # in memory before /readyz says ready: the first request does not wait for it
    except (FetchError, ModelUnavailable, ModelLoadFailed) as exc:  # each message is one line
        job.reason, job.status = str(exc), FetchStatus.UNAVAILABLE
        logger.warning("%s", job.line())
        return
    job.status = FetchStatus.READY
    (logger.warning if job.short else logger.info)("%s", job.line())


def _run(jobs: list[FetchJob]) -> None:
    for job in jobs:
        try:
            _fetch_and_load(job)
        except Exception as exc:  # noqa: BLE001 - one model's surprise must not leave the others "loading" forever
            job.reason, job.status = f"{type(exc).__name__}: {str(exc).strip()[:200]}", FetchStatus.UNAVAILABLE
            logger.exception("%s", job.line())


def start_model_loads() -> Optional[threading.Thread]:
    """Start downloading $TTS_APP_MODELS and loading every model the operator chose in the background (None when
    there is none besides the embedded voice). Their jobs exist on return, so /readyz is 503 for them from the
    first request on."""
    fetched = requested_models()
    jobs = [add_job(model_id) for model_id in fetched]
    for model_id in served_ids():
        if model_id != EMBEDDED_ID and model_id not in fetched:
            jobs.append(add_job(model_id))
            jobs[-1].stage = "loading"  # on this machine already: loaded only
    if not jobs:
        return None
    thread = threading.Thread(target=_run, args=(jobs,), name="model-fetch", daemon=True)
    thread.start()
    return thread
