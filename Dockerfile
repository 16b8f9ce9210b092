# The agent worker image (also runs the codec endpoint: `python starter.py codec-server`). docs/operations.md.
#   docker build -t durable-agents-worker:0.1.0 .
FROM python:3.11.13-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# The pinned dependency tree first, so code changes do not reinstall it.
COPY requirements.lock ./
RUN python -m pip install -r requirements.lock

COPY . .
RUN python -m pip install --no-deps --no-build-isolation . \
    && useradd --uid 10001 --create-home --shell /usr/sbin/nologin agent \
    && mkdir -p /data \
    && chown agent:agent /data

# Without AGENT_DATABASE_URL (one host only) the effects ledger and the transcript store live on this volume;
# a new named volume inherits its owner. docker-compose.yml sets the URL: its replicas keep nothing here.
VOLUME ["/data"]
ENV AGENT_LEDGER=/data/ledger.db \
    AGENT_LOG_FORMAT=json

USER agent
# 9464: Prometheus metrics (AGENT_METRICS_ADDRESS); 8081: the codec endpoint, when run as one.
EXPOSE 9464 8081

# SIGTERM (docker stop) drains the worker: running activities get 10 s, then it exits.
STOPSIGNAL SIGTERM
CMD ["python", "worker.py"]
