"""One upload policy for the Sources page and the API (issue 15), and how long uploaded files are kept.

A file is refused before it is stored when it is empty or larger than FINOPS_MAX_UPLOAD_BYTES (default 2 GiB;
larger exports go through `manage.py import_usage` on the server, which streams from disk). An uploaded file is
kept while its run may need it (queued or running) and for FINOPS_UPLOAD_RETENTION_DAYS after its run ended
(default 30: time to re-run or audit it); then the file is deleted and the run keeps its name and figures.
"""

import datetime as dt

from django.conf import settings
from django.core.files import File
from django.utils import timezone

from finops.models import IngestRun


class UploadRefused(ValueError):
    """The message says why, for the person uploading."""


def upload_check(upload) -> None:
    """Refuse an upload the importer should never see: empty, or over the size limit."""
    limit = settings.FINOPS_MAX_UPLOAD_BYTES
    size = File(upload).size  # an UploadedFile knows it; a plain file object is measured
    if size == 0:
        raise UploadRefused("The file is empty.")
    if size > limit:
        raise UploadRefused(
            f"The file is {_size(size)}, over the {_size(limit)} upload limit; import it on the server with "
            "`manage.py import_usage` instead."
        )


def _size(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def uploads_prune(*, now: dt.datetime | None = None) -> int:
    """Delete the files of runs that ended more than the retention ago; returns how many were deleted."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=settings.FINOPS_UPLOAD_RETENTION_DAYS)
    ended = IngestRun.objects.filter(
        status__in=[IngestRun.Status.SUCCEEDED, IngestRun.Status.FAILED],
        finished_at__lt=cutoff,
    ).exclude(upload="")
    deleted = 0
    for run in ended.iterator():
        run.upload.delete(save=False)  # a file already gone is fine: the storage ignores it
        IngestRun.objects.filter(id=run.id).update(upload="")
        deleted += 1
    return deleted
