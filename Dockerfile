# svc: one binary, one LMDB file. Build: docker build -t svc .
# Run:   docker run -p 8080:8080 -v svc-data:/data -e SVC_BASE_URL=https://svc.example.com svc
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY config ./config
COPY src ./src
COPY commands ./commands
# npm ci runs the prepare script, which compiles TypeScript to dist/.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

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
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SVC_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM from `docker stop` drains in-flight requests and flushes the store.
ENTRYPOINT ["node", "bin/run.js"]
CMD ["serve"]
