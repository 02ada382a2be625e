# One image, three commands: api (bin/api), relay and notifier.
#
# Operator tasks run compiled, from dist/: tsconfig.build.json compiles tasks/
# with everything else, and the image has no TypeScript sources for tsx to run.
#   node dist/tasks/cancel-lost-report.js --report <id> --ticket <incident> --operator <id> [--execute]
#   node dist/tasks/clean-worker-jobs.js --operator <id> [--task …] [--older-than-hours 24] [--execute]
# (`tsx tasks/<name>.ts`, as in the README, is the same script from a checkout.)
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev \
 && test -f dist/tasks/cancel-lost-report.js && test -f dist/tasks/clean-worker-jobs.js

FROM node:24-bookworm-slim
ENV NODE_ENV=production API_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/admin-ui/dist ./admin-ui/dist
COPY --from=build /app/app-ui/dist ./app-ui/dist
USER node
EXPOSE 8080 8081 8085
CMD ["node", "dist/api/main.js"]
