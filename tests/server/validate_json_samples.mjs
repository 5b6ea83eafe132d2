// Validates the documents tests/grammar/json_schema_samples wrote with ajv (JSON Schema draft
// 2020-12, formats from ajv-formats), a validator independent of gemlet's grammar code.
//   node validate_json_samples.mjs SCHEMA_DIR SAMPLE_DIR [MIN_SCHEMAS=20] [MIN_DOCUMENTS=50]
// SAMPLE_DIR/NAME/*.json are the documents of SCHEMA_DIR/NAME.json. Fails (exit 1) when a
// document does not parse or validate, when a schema has fewer than MIN_DOCUMENTS documents,
// when there are fewer than MIN_SCHEMAS schemas, or when a schema accepts every one of a few
// probe values (then it would not test anything).
import fs from "node:fs";
import path from "node:path";
import Ajv2020Module from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;

const [schemaDir, sampleDir, minSchemasArg, minDocsArg] = process.argv.slice(2);
if (!schemaDir || !sampleDir) {
  console.error("usage: node validate_json_samples.mjs SCHEMA_DIR SAMPLE_DIR [MIN_SCHEMAS] [MIN_DOCUMENTS]");
  process.exit(2);
}
const minSchemas = Number(minSchemasArg ?? 20);
const minDocs = Number(minDocsArg ?? 50);
const probes = [null, 0, -1.5, "", "x", true, [], [1], {}, { a: 1 }];

let failures = 0;
let documents = 0;
const fail = (msg) => {
  failures++;
  if (failures <= 50) console.error(msg);
};
const schemas = fs.readdirSync(schemaDir).filter((f) => f.endsWith(".json")).sort();
for (const file of schemas) {
  const name = path.basename(file, ".json");
  const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, file), "utf8"));
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  if (probes.every((p) => validate(p))) fail(`${name}: accepts every probe value`);
  const dir = path.join(sampleDir, name);
  const docs = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort() : [];
  if (docs.length < minDocs) fail(`${name}: ${docs.length} documents, expected at least ${minDocs}`);
  for (const d of docs) {
    const text = fs.readFileSync(path.join(dir, d), "utf8");
    documents++;
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      fail(`${name}/${d}: not JSON (${e.message}): ${text.slice(0, 200)}`);
      continue;
    }
    if (!validate(value)) {
      fail(`${name}/${d}: invalid: ${ajv.errorsText(validate.errors)}: ${text.slice(0, 300)}`);
    }
  }
}
if (schemas.length < minSchemas) fail(`${schemas.length} schemas, expected at least ${minSchemas}`);
console.log(`validate_json_samples: ${schemas.length} schemas, ${documents} documents, ${failures} failures`);
process.exit(failures ? 1 : 0);
