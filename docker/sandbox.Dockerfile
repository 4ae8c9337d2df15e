# The per-rollout sandbox image: the debootstrap'ed base (see build-base-image.sh) plus an
# unprivileged user. Built with --network none: nothing here may download anything.
FROM rft-endpoints-base:bookworm
RUN groupadd -g 1000 sandbox && useradd -u 1000 -g 1000 -d /workspace -s /bin/sh -M sandbox \
 && mkdir -p /workspace && chown 1000:1000 /workspace
ENV LANG=C.UTF-8 HOME=/workspace
WORKDIR /workspace
USER 1000:1000
CMD ["sleep", "infinity"]
