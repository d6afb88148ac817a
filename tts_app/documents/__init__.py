"""Long documents read as one job: chapters, progress, audio written to disk as it is made."""

from tts_app.documents.job import DocumentJob, DocumentSettings, JobStatus
from tts_app.documents.registry import ClientJobsFull, ClientShareFull, DocumentJobs, JobsBusy, api_client, document_jobs, page_client

__all__ = ["ClientJobsFull", "ClientShareFull", "DocumentJob", "DocumentJobs", "DocumentSettings", "JobStatus", "JobsBusy", "api_client", "document_jobs", "page_client"]
