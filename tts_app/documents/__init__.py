"""Long documents read as one job: chapters, progress, audio written to disk as it is made."""

from .job import DocumentJob, DocumentSettings, JobStatus
from .registry import DocumentJobs, JobsBusy, document_jobs

__all__ = ["DocumentJob", "DocumentJobs", "DocumentSettings", "JobStatus", "JobsBusy", "document_jobs"]
