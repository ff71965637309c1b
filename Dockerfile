# Production image for web, worker and beat (docker-compose.yml). CPU-only torch, model baked in by its wheel.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY config ./config
COPY core ./core
COPY tenants ./tenants
COPY episodic ./episodic
COPY semantic ./semantic
COPY procedural ./procedural
COPY router ./router
COPY consolidation ./consolidation
COPY dashboard ./dashboard
COPY demo ./demo
# The MCP server and the demo speak to the API through the project's own client.
COPY clients ./clients
# TORCH_INDEX_URL: an index serving PyTorch's CPU-only wheels, so the image does not carry CUDA.
ARG TORCH_INDEX_URL=""
RUN pip install --no-cache-dir "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} \
 && pip install --no-cache-dir ./clients/python .
COPY . .
RUN DJANGO_SECRET_KEY=build DATABASE_URL=postgres://x@localhost/x REDIS_URL=redis://localhost DJANGO_ALLOWED_HOSTS=x \
    python manage.py collectstatic --no-input
RUN useradd --system --uid 1000 engram && chown -R engram /app
USER engram
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--config", "config/gunicorn_conf.py", "--bind", "0.0.0.0:8000", "--workers", "4", "--threads", "4"]
