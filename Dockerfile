# One image, three commands: api (bin/api), relay and notifier.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm run build:console && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production API_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/admin-ui/dist ./admin-ui/dist
USER node
EXPOSE 8080 8081 8085
CMD ["node", "dist/api/main.js"]
