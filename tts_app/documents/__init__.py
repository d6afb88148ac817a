"""Long documents read as one job: chapters, progress, audio written to disk as it is made."""

from .job import DocumentJob, DocumentSettings, JobStatus
from .registry import ClientJobsFull, DocumentJobs, JobsBusy, api_client, document_jobs, page_client

__all__ = ["ClientJobsFull", "DocumentJob", "DocumentJobs", "DocumentSettings", "JobStatus", "JobsBusy", "api_client", "document_jobs", "page_client"]
