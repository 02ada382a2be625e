import { defineConfig } from "vite";

// Built once (npm run build:console) into admin-ui/dist and served by the API
// at /admin (api/console/routes.ts). Everything is bundled: the page loads no
// third-party script, font or stylesheet at run time.
export default defineConfig({
  base: "/admin/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    // Inlined assets would need data: URLs in the console's content security policy.
    assetsInlineLimit: 0,
  },
});
