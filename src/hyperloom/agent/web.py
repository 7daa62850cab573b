"""Opt-in lookups for the local agent: `web_fetch` and `web_search`, offered only with HYPERLOOM_ALLOW_WEB=1.

httpx2 (trust_env off: no proxy or .netrc) with a byte limit and a time limit; HTML becomes text through
trafilatura (the `web` extra), which keeps a page's main text and its links and drops navigation. Search goes to
the endpoint the user names in HYPERLOOM_SEARCH_URL; no provider is assumed. Every result is outside material:
marked so for the model and recorded with its address, size and hash in the transcript, never as a measurement.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, urlsplit

import anyio.to_thread
import httpx2

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import utc_now

ALLOW_ENV, SEARCH_ENV = "HYPERLOOM_ALLOW_WEB", "HYPERLOOM_SEARCH_URL"
MAX_BYTES = 2_000_000
TIMEOUT_S = 20.0
MAX_REDIRECTS = 5
MAX_RESULTS = 8
_ESCAPED = re.compile(r"\\([_*])")


@dataclass(frozen=True)
class WebConfig:
    allowed: bool
    search_url: str | None = None  # a URL with {query} in it, or one the query is added to as q=
    max_bytes: int = MAX_BYTES
    timeout_s: float = TIMEOUT_S


def web_config_from_env(environ: dict[str, str] | None = None) -> WebConfig:
    env = os.environ if environ is None else environ
    return WebConfig(allowed=env.get(ALLOW_ENV, "").strip() == "1", search_url=env.get(SEARCH_ENV, "").strip() or None)


@dataclass(frozen=True)
class OutsideMaterial:
    """A lookup's text for the model and its citation for the transcript."""

    text: str
    citation: dict[str, Any]


def new_web_client(config: WebConfig) -> httpx2.AsyncClient:
    timeout = httpx2.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0))
    return httpx2.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=True, max_redirects=MAX_REDIRECTS,
                              headers={"User-Agent": "hyperloom-agent (+https://pypi.org/project/hyperloom/)"})


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HyperloomError(f"web_fetch takes an http or https address, not {url!r}", "give a full URL such as https://rocm.docs.amd.com/...")


async def _get(client: httpx2.AsyncClient, url: str, config: WebConfig) -> tuple[httpx2.Response, bytes]:
    """GET with the byte limit applied while reading, and the time limit over the whole exchange."""
    _check_url(url)
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(config.timeout_s):
            async with client.stream("GET", url) as response:
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > config.max_bytes:
                        raise HyperloomError(f"{url} is larger than the {config.max_bytes:,}-byte limit of web_fetch",
                                             "fetch a smaller page (a raw file, one section)")
                    chunks.append(chunk)
    except TimeoutError as exc:
        raise HyperloomError(f"{url} did not answer in full within {config.timeout_s:g} s", "try again later or another address") from exc
    except httpx2.HTTPError as exc:
        raise HyperloomError(f"could not fetch {url} ({type(exc).__name__}: {exc})",
                             "check the address; the machine may have no network") from exc
    if response.status_code >= 400:
        raise HyperloomError(f"{url} answered HTTP {response.status_code}", "check the address")
    return response, b"".join(chunks)


def html_to_text(html: str, url: str) -> tuple[str, str | None]:
    """(main text as markdown with links, title) of an HTML page."""
    try:
        import trafilatura
    except ImportError as exc:
        raise HyperloomError("web_fetch needs trafilatura to read HTML", "pip install 'hyperloom[web]'") from exc
    text = trafilatura.extract(html, url=url, output_format="markdown", include_links=True, include_tables=True, favor_recall=True)
    metadata = trafilatura.extract_metadata(html, default_url=url)
    # markdown escapes every underscore, and identifiers (s_waitcnt, v_dot4_i32_i8) must read as written
    return _ESCAPED.sub(r"\1", text or "").strip(), (metadata.title if metadata is not None else None)


def _mark(kind: str, url: str, at: str, body: str) -> str:
    return (f"OUTSIDE MATERIAL ({kind} {url}, {at}). Not a measurement: cite the address, and tag any number from it ASSUMED.\n\n{body}")


async def _page_text(response: httpx2.Response, raw: bytes, url: str) -> tuple[str, str | None]:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    decoded = raw.decode(response.encoding or "utf-8", "replace")
    if content_type in ("text/html", "application/xhtml+xml") or decoded.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        return await anyio.to_thread.run_sync(html_to_text, decoded, str(response.url))
    if content_type.startswith("text/") or content_type in ("application/json", "application/xml", ""):
        return decoded.strip(), None
    raise HyperloomError(f"{url} is {content_type}, not text", "fetch an HTML or text page")


async def web_fetch(client: httpx2.AsyncClient, url: str, config: WebConfig) -> OutsideMaterial:
    response, raw = await _get(client, url, config)
    text, title = await _page_text(response, raw, url)
    if not text:
        raise HyperloomError(f"{url} has no text that could be extracted", "try the page's raw or printable version")
    at = utc_now().isoformat()
    citation = {"kind": "web_fetch", "url": url, "final_url": str(response.url), "title": title, "fetched_at": at,
                "status": response.status_code,
                "content_type": response.headers.get("content-type", ""), "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    heading = f"# {title}\n\n" if title and not text.startswith("#") else ""
    return OutsideMaterial(_mark("fetched from", str(response.url), at, heading + text), citation)


def search_address(template: str, query: str) -> str:
    if "{query}" in template:
        return template.replace("{query}", quote_plus(query))
    return template + ("&" if "?" in template else "?") + "q=" + quote_plus(query)


def search_results(payload: Any) -> list[dict[str, str]]:
    """Title, address and snippet from a JSON search answer: SearXNG's `results`, or `items`/`data`/a bare list."""
    entries = payload
    if isinstance(payload, dict):
        entries = next((payload[k] for k in ("results", "items", "data", "organic_results") if isinstance(payload.get(k), list)), [])
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        url = entry.get("url") or entry.get("link") or entry.get("href")
        if isinstance(url, str) and url:
            snippet = next((entry[k] for k in ("content", "snippet", "description", "body") if isinstance(entry.get(k), str)), "")
            found.append({"title": str(entry.get("title") or ""), "url": url, "snippet": " ".join(snippet.split())[:300]})
    return found[:MAX_RESULTS]


async def web_search(client: httpx2.AsyncClient, query: str, config: WebConfig) -> OutsideMaterial:
    if not config.search_url:
        raise HyperloomError(f"web_search has no search endpoint: {SEARCH_ENV} is not set",
                             f"set {SEARCH_ENV} to your search service, e.g. a SearXNG instance's http://host:8888/search?q={{query}}&format=json")
    if not query.strip():
        raise HyperloomError("web_search got an empty query", "search for some words")
    address = search_address(config.search_url, query)
    response, raw = await _get(client, address, config)
    at = utc_now().isoformat()
    try:
        results = search_results(json.loads(raw))
        body = "\n".join(f"{i}. {r['title']} <{r['url']}>\n   {r['snippet']}" for i, r in enumerate(results, 1)) or "no results"
    except (json.JSONDecodeError, UnicodeDecodeError):
        results = []
        body, _ = await _page_text(response, raw, address)
    citation = {"kind": "web_search", "query": query, "url": address, "fetched_at": at, "bytes": len(raw),
                "sha256": hashlib.sha256(raw).hexdigest(), "results": [r["url"] for r in results]}
    return OutsideMaterial(_mark(f"search results for {query!r} from", address, at, body), citation)
