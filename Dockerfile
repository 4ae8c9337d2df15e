# The rft-endpoints server. Multi-stage: the build stage compiles dist/ and keeps only production
# dependencies; the runtime stage is Node 24 slim (the current LTS), a non-root user, a data volume and a health check.
#
#   docker build -t rft-endpoints .                       # with a registry (official node:24-slim)
#   docker/build-server-image.sh                          # without one (bases made locally)
#
# Your own units: mount them (docker run -v "$PWD/tools:/app/tools:ro" -v "$PWD/graders:/app/graders:ro"
# [-v "$PWD/mcp.json:/app/mcp.json:ro"]) or bake them into a derived image (FROM rft-endpoints, COPY
# tools/ /app/tools/). See docs/deploy.md.
ARG NODE_IMAGE=node:24-slim
ARG BUILD_IMAGE=${NODE_IMAGE}

FROM ${BUILD_IMAGE} AS build
WORKDIR /app
# A C compiler: the bwrap driver's supervisor is built with dist/ (static, so the runtime needs none).
RUN command -v cc >/dev/null || (apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null \
 && rm -rf /var/lib/apt/lists/*)
# Dependencies first: this layer is reused until package*.json change.
COPY package.json package-lock.json ./
RUN npm ci --no-fund --no-audit
# The rest of the context (.dockerignore keeps it to what the build reads).
COPY . .
# better-sqlite3 compiled from source leaves its sources and objects (25 MB): the addon is all it loads.
RUN npm run build && npm prune --omit=dev --no-fund --no-audit \
 && rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
           node_modules/better-sqlite3/build/Release/obj node_modules/better-sqlite3/build/Release/obj.target \
           node_modules/better-sqlite3/build/Release/.deps

FROM ${NODE_IMAGE}
# bubblewrap: the bwrap sandbox driver, for hosts that let the container make user namespaces
# (docs/deploy.md lists the docker run flags); util-linux's prlimit is in every Debian base.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 rft \
 && useradd --system --uid 10001 --gid rft --home-dir /app --shell /usr/sbin/nologin rft \
 && mkdir -p /data && chown rft:rft /data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
# The shipped units, compiled, where yours go (they import 'rft-endpoints', which is this package).
COPY --from=build /app/dist/tools tools
COPY --from=build /app/dist/graders graders
COPY docker/healthcheck.mjs docker/healthcheck.mjs
COPY examples examples
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    RFT_DATA_DIR=/data \
    RFT_TOOLS_DIR=/app/tools \
    RFT_GRADERS_DIR=/app/graders \
    RFT_SANDBOX_TEMPLATES=/app/examples
USER rft
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "docker/healthcheck.mjs"]
CMD ["node", "dist/src/cli/main.js", "serve"]
