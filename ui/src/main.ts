// Entry point: mounts the app and exposes its measurements to the
// end-to-end test (window.__warpscope, perf.ts).
import "./style.css";
import { App } from "./app";
import type { UiPerf } from "./perf";

const app = new App(document.getElementById("app")!);
(window as unknown as { __warpscope: { perf: UiPerf } }).__warpscope = { perf: app.measurements.perf };
