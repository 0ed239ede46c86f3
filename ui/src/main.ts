// Entry point: mounts the app and exposes its measurements to the
// end-to-end test (window.__warpscope).
import "./style.css";
import { App } from "./app";

const app = new App(document.getElementById("app")!);
(window as unknown as { __warpscope: { perf: App["perf"] } }).__warpscope = { perf: app.perf };
