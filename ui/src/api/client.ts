// The one way the app talks to warpscope-server (docs/api.md): GETs under
// /api/v1/ with the bearer token the user gave (kept in sessionStorage, so it
// dies with the tab). A 401 opens the login prompt and retries once the user
// has entered a token. The answers' types: api/types.ts.
import type { ErrorJson } from "./types";

const TOKEN_KEY = "warpscope.token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export type Params = Record<string, string | number | undefined>;

export function apiUrl(path: string, params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

let pendingLogin: Promise<void> | null = null;

async function request(path: string, params: Params, signal?: AbortSignal): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(apiUrl(path, params), { headers, signal });
    if (res.status === 401 && attempt < 3) {
      pendingLogin ??= askForToken(token !== null).finally(() => (pendingLogin = null));
      await pendingLogin;
      continue;
    }
    if (!res.ok) {
      let message = `${res.status} ${res.statusText}`;
      try {
        const body = (await res.json()) as ErrorJson;
        if (body?.error?.message) message = body.error.message;
      } catch {
        // Not JSON (a proxy's page): the status line says enough.
      }
      throw new ApiError(res.status, message);
    }
    return res;
  }
}

export async function apiGet<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
  const res = await request(path, params, signal);
  return (await res.json()) as T;
}

export async function apiBlob(path: string, params: Params): Promise<Blob> {
  return (await request(path, params)).blob();
}

// Hands a fetched file to the browser as a download.
export function saveBlob(blob: Blob, name: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

// A small modal: resolves once a token is stored.
function askForToken(wasWrong: boolean): Promise<void> {
  return new Promise((resolve) => {
    const dialog = document.createElement("div");
    dialog.className = "modal";
    dialog.innerHTML = `<form class="login">
        <h2>Token required</h2>
        <p>${wasWrong ? "The server did not accept that token." : "This warpscope-server was started with --token."}
        Enter it to use the API; it is kept for this tab only.</p>
        <input type="password" name="token" autocomplete="current-password" placeholder="token" required>
        <button type="submit">Sign in</button>
      </form>`;
    const form = dialog.querySelector("form")!;
    const input = form.querySelector("input")!;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      dialog.remove();
      resolve();
    });
    document.body.appendChild(dialog);
    input.focus();
  });
}
