# svc: one binary, one LMDB file. Two images from this file:
#
#   docker build -t svc .                       Node and node_modules on node:24-slim (the default, last stage)
#   docker build --target binary -t svc:binary \
#     --build-arg SVC_BUILD_COMMIT=$(git rev-parse --short=12 HEAD) .
#                                               the single executable alone, on distroless (no shell, no Node)
#
# Run either: docker run -p 8080:8080 -v svc-data:/data -e SVC_BASE_URL=https://svc.example.com svc
# (production: behind a TLS proxy, see docs/operations.md, Docker). `svc` is on PATH in both, for
# `docker exec CONTAINER svc ledger verify` and the other --local commands. The master key can come
# from a mounted secret instead of the volume: -e SVC_MASTER_KEY_FILE=/run/secrets/svc_master_key.
# The build context holds no .git, so the commit that `svc --version` names comes from
# SVC_BUILD_COMMIT (else it says "unknown").
ARG SVC_BUILD_COMMIT=unknown

FROM node:24-slim AS build
ARG SVC_BUILD_COMMIT
ENV SVC_BUILD_COMMIT=$SVC_BUILD_COMMIT
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY config ./config
COPY scripts ./scripts
COPY src ./src
COPY commands ./commands
# npm ci runs the prepare script, which generates the command index and compiles TypeScript to dist/.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

# The single executable, made from this image's own Node 24 (official build, glibc).
FROM node:24-slim AS build-binary
ARG SVC_BUILD_COMMIT
ENV SVC_BUILD_COMMIT=$SVC_BUILD_COMMIT
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY config ./config
COPY scripts ./scripts
COPY src ./src
COPY commands ./commands
RUN npm ci --no-audit --no-fund \
  && npm run build:binary \
  && mkdir -p /out/data \
  && cp "dist/bin/svc-linux-$(node -p process.arch)" /out/svc

# distroless/cc holds glibc, libstdc++ and libgcc: what Node and the native addons link against
# (ldd lists nothing else). It has no shell, so the health check is svc's own `svc health`.
FROM gcr.io/distroless/cc-debian12:nonroot AS binary
ENV NODE_ENV=production \
    SVC_DATA_DIR=/data \
    SVC_HOST=0.0.0.0 \
    SVC_PORT=8080
COPY --from=build-binary /out/svc /usr/local/bin/svc
# The image's nonroot user (65532) owns the volume; there is no chown to run in a distroless image.
COPY --from=build-binary --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
# The native code is unpacked at first start into ~/.cache/svc (HOME is /home/nonroot here). With a
# read-only root filesystem, point SVC_CACHE_DIR at a writable volume or tmpfs mounted without noexec.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/svc", "health"]
# SIGTERM from `docker stop` drains in-flight requests and flushes the store.
ENTRYPOINT ["/usr/local/bin/svc"]
CMD ["serve"]

FROM node:24-slim
ENV NODE_ENV=production \
    SVC_DATA_DIR=/data \
    SVC_HOST=0.0.0.0 \
    SVC_PORT=8080
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/config ./config
COPY --from=build /app/dist ./dist
# The commands' help, made at build time: without it every --help would be empty.
COPY --from=build /app/oclif.manifest.json ./
# `svc` on PATH (docker exec CONTAINER svc ...): bin/run.js, which finds dist/ by its real path.
RUN chmod 0755 /app/bin/run.js \
  && ln -s /app/bin/run.js /usr/local/bin/svc \
  && mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SVC_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM from `docker stop` drains in-flight requests and flushes the store.
ENTRYPOINT ["svc"]
CMD ["serve"]
