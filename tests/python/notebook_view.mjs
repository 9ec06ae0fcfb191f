// Opens a saved notebook output (tests/python/test_notebook.py writes it)
// in Debian's headless Chromium and prints, as JSON, what each cell shows:
//   - `static`: with JavaScript off (an untrusted notebook), the static
//     fragment: the headline's text and height, the visible text, the
//     charts, the link;
//   - `page`: with JavaScript on (a trusted one), the page embedded in each
//     cell's iframe: whether it started, hid the static fragment, and what
//     its verdict and buffer timeline show.
//   node tests/python/notebook_view.mjs PAGE.html SCREENSHOT.png
import { pathToFileURL } from "node:url";
import { launchChromium } from "../e2e/lib.mjs";

const [page_path, screenshot] = process.argv.slice(2);
const browser = await launchChromium();
const errors = [];

async function open(javaScriptEnabled) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 }, javaScriptEnabled });
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push("console: " + m.text());
  });
  // Nothing may be fetched: the page's wasm travels inside the output.
  page.on("request", (r) => {
    if (!r.url().startsWith("file:") && !r.url().startsWith("about:") && !r.url().startsWith("data:")) {
      errors.push("request to " + r.url());
    }
  });
  await page.goto(pathToFileURL(page_path).href);
  return page;
}

try {
  const still = await open(false);
  const seen = {
    static: await still.evaluate(() => {
      const out = { scripts: 0 };
      for (const section of document.querySelectorAll("section")) {
        const fragment = section.querySelector(".oomscope-static") || section;
        out.scripts += fragment.querySelectorAll("script").length;
        const headline = fragment.querySelector(".headline");
        const svg = fragment.querySelector("svg");
        const link = fragment.querySelector("a[href]");
        out[section.id] = {
          headline: headline ? headline.innerText.replace(/\s*\(estimate [^)]*\)$/, "").trim() : null,
          headlineHeight: headline ? headline.getBoundingClientRect().height : 0,
          text: fragment.innerText,
          polylines: fragment.querySelectorAll("svg polyline").length,
          chartWidth: svg ? svg.getBoundingClientRect().width : 0,
          link: link ? link.getAttribute("href") : null,
          embedded: section.querySelector("iframe.oomscope-page") !== null,
        };
      }
      return out;
    }),
    page: {},
  };
  const live = await open(true);
  const sections = await live.locator("section").evaluateAll((all) => all.map((s) => s.id));
  for (const id of sections) {
    const iframe = live.locator(`#${id} iframe.oomscope-page`);
    if ((await iframe.count()) === 0) continue;
    const frame = live.frameLocator(`#${id} iframe.oomscope-page`);
    await frame.locator(".verdict-headline").first().waitFor({ timeout: 60000 });
    await live.waitForFunction((i) => {
      const f = document.querySelector(`#${i} iframe.oomscope-page`);
      return f && f.getBoundingClientRect().height > 300;
    }, id, { timeout: 10000 });
    seen.page[id] = {
      frameHeight: (await iframe.boundingBox()).height,
      staticHidden: await live.locator(`#${id} .oomscope-static`).evaluate((e) => getComputedStyle(e).display === "none"),
      headline: (await frame.locator(".verdict-headline .verdict-answer").first().textContent()).trim(),
      node: await frame.locator(".verdict-headline").first().getAttribute("data-node"),
      dropZone: await frame.locator(".drop-zone").count(),
      text: await frame.locator("body").innerText(),
      shares: await frame.locator("table.allocations .share-text").allTextContents(),
    };
  }
  await live.screenshot({ path: screenshot, fullPage: true });
  if (errors.length) throw new Error(errors.join("\n"));
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
