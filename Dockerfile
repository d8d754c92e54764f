# Image for the bridge and the audit API (docker-compose.redpanda.yml picks the command).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# the colony SDK is an npm workspace (docs/adr/0008): its manifest must be there for npm ci
COPY sdk/package.json sdk/
RUN npm ci --omit=optional --no-audit --no-fund
COPY . .
USER node
