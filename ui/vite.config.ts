// Vite builds the app into dist/ (CMake passes --outDir into the build tree);
// `npm run dev` proxies the API to a local warpscope-server.
import { defineConfig } from "vite";

export default defineConfig({
  build: {
    outDir: "dist",
    assetsDir: "assets",
    target: "es2020",
    reportCompressedSize: false,
  },
  server: {
    proxy: { "/api": "http://127.0.0.1:7070", "/healthz": "http://127.0.0.1:7070" },
  },
});
