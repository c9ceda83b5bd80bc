/** A JSON POST as an API client sends it; anything but 200 or 201 throws with the answer. */
export async function post(url: string, body?: unknown): Promise<Record<string, any>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, any>;
}
