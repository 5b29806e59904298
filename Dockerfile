# Production image: gunicorn + WhiteNoise for the web, the same image runs the Celery worker and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY finops ./finops
COPY ingest ./ingest
COPY demo ./demo
COPY bench ./bench
RUN pip install .

COPY manage.py ./
COPY templates ./templates
COPY static ./static
# collectstatic needs settings to load; these build-time values are never used at run time.
RUN DEBUG=0 SECRET_KEY=collectstatic-only ALLOWED_HOSTS=localhost python manage.py collectstatic --no-input -v 0

# /app/media exists in the image, owned by finops, so the named volume mounted there starts writable.
RUN useradd --system --uid 1000 finops && mkdir -p /app/media && chown -R finops /app
USER finops
EXPOSE 8000
CMD ["gunicorn", "finops.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
