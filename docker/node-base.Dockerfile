# Node (24, the LTS the image runs) on the locally debootstrap'ed Debian base (build-base-image.sh), for machines that reach no
# container registry: it stands in for the official node:24-slim (the same /usr/local layout), so the
# top-level Dockerfile builds unchanged on it. Built by build-server-image.sh from a context holding
# the build machine's own Node (node, npm, headers): Debian bookworm's nodejs is 18, too old.
FROM rft-endpoints-base:bookworm AS runtime
# Debian's nodejs 18 came with the base (the sandbox image wants it); here the copied Node replaces it.
RUN apt-get purge -y -qq --auto-remove nodejs >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY node /usr/local/bin/node
RUN node --version
CMD ["node"]

# The build stage's base: npm, Node's headers (node-gyp builds native addons against them instead of
# downloading them), a C++ toolchain, and the build machine's CA bundle (its npm registry may sit
# behind a TLS proxy). Never the runtime base: the server image carries none of this.
FROM runtime AS build
COPY npm /usr/local/lib/node_modules/npm
COPY include /usr/local/include/node
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nnodedir=/usr/local\nfund=false\naudit=false\nupdate-notifier=false\n' > /usr/local/etc/npmrc \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make g++ >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && npm --version
