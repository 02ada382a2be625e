import { defineConfig } from "vite";

// Built (npm run build:app) into app-ui/dist and served by the API at /app
// (api/people-app/routes.ts). Everything is bundled: the page loads no
// third-party script, font or stylesheet; only map tiles come from elsewhere.
export default defineConfig({
  base: "/app/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    // Inlined assets would need more data: URLs in the app's content security policy.
    assetsInlineLimit: 0,
    target: "es2022",
  },
});
