/** A JSON request as an API client sends it; a status not in `ok` throws with the answer. */
export async function send(
  method: string,
  url: string,
  body?: unknown,
  ok: number[] = [200, 201, 202],
): Promise<Record<string, any>> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!ok.includes(res.status)) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, any>;
}

/** A JSON POST as an API client sends it; anything but 200 or 201 throws with the answer. */
export function post(url: string, body?: unknown): Promise<Record<string, any>> {
  return send('POST', url, body, [200, 201]);
}
