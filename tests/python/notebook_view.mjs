// Opens a saved notebook output (tests/python/test_notebook.py writes it)
// in Debian's headless Chromium and prints, as JSON, what each cell shows:
// the headline's text and height, the visible text, the charts, the link.
//   node tests/python/notebook_view.mjs PAGE.html SCREENSHOT.png
import { pathToFileURL } from "node:url";
import { launchChromium } from "../e2e/lib.mjs";

const [page_path, screenshot] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => {
    if (!r.url().startsWith("file:")) errors.push("request to " + r.url());
  });
  await page.goto(pathToFileURL(page_path).href);
  const seen = await page.evaluate(() => {
    const out = { scripts: document.querySelectorAll("script").length };
    for (const section of document.querySelectorAll("section")) {
      const headline = section.querySelector(".headline");
      const svg = section.querySelector("svg");
      const link = section.querySelector("a[href]");
      out[section.id] = {
        headline: headline ? headline.innerText.replace(/\s*\(estimate [^)]*\)$/, "").trim() : null,
        headlineHeight: headline ? headline.getBoundingClientRect().height : 0,
        text: section.innerText,
        polylines: section.querySelectorAll("svg polyline").length,
        chartWidth: svg ? svg.getBoundingClientRect().width : 0,
        link: link ? link.getAttribute("href") : null,
      };
    }
    return out;
  });
  await page.screenshot({ path: screenshot, fullPage: true });
  if (errors.length) throw new Error(errors.join("\n"));
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
