// Builds the dashboard into the Python package (src/wisp/server/static, gitignored).
// Everything is bundled: no CDN, no web fonts, no request leaves the machine.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../src/wisp/server/static",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: { "/api": "http://127.0.0.1:8080" },
  },
});
