// A real OpenID provider for the single sign-on tests: the npm package oidc-provider (an OpenID Certified
// implementation) with one confidential client that must use PKCE (S256), users read from a JSON file at
// each sign-in (so a test can change a user's groups), and a sign-in page of its own that checks passwords.
//
// Run by tests/accounts/oidc.py:  node oidc_provider.mjs <config.json>
// config: {"module": ".../oidc-provider/lib/index.js", "port": 0, "client": {client_id, client_secret,
//          redirect_uris}, "users_file": "..."}; users file: {"<login>": {"password", "sub", "email",
//          "name", "given_name", "family_name", "groups": [...]}}.  Prints "listening <issuer>" once ready.
import { readFileSync } from "node:fs";
import http from "node:http";
import { pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const { default: Provider } = await import(pathToFileURL(config.module).href);

const users = () => JSON.parse(readFileSync(config.users_file, "utf-8"));
const userBySub = (sub) => Object.entries(users()).map(([login, u]) => ({ ...u, login })).find((u) => u.sub === sub);
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const server = http.createServer();
server.listen(config.port, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{ ...config.client, grant_types: ["authorization_code"], response_types: ["code"],
                token_endpoint_auth_method: "client_secret_post" }],
    // PKCE for every client, confidential ones included (the default asks it of public clients only).
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"],
              profile: ["name", "given_name", "family_name", "preferred_username"], groups: ["groups"] },
    async findAccount(ctx, sub) {
      const user = userBySub(sub);
      if (!user) return undefined;
      return { accountId: sub, async claims() {
        return { sub, email: user.email, email_verified: true, name: user.name, given_name: user.given_name,
                 family_name: user.family_name, preferred_username: user.login, groups: user.groups };
      } };
    },
    // A first-party client: the scopes it asks for are granted without a consent screen.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope("openid email profile groups");
      await grant.save();
      return grant;
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ["zhiku-test-provider-cookie-key"] },
  });
  const callback = provider.callback();

  server.on("request", async (req, res) => {
    const match = new URL(req.url, issuer).pathname.match(/^\/interaction\/([\w-]+)(\/login)?$/);
    if (!match) return callback(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (req.method === "POST" && match[2]) {
        let body = "";
        for await (const chunk of req) body += chunk;
        const form = new URLSearchParams(body);
        const user = users()[form.get("login")];
        if (user && user.password === form.get("password")) {
          return provider.interactionFinished(req, res, { login: { accountId: user.sub } }, { mergeWithLastSubmission: false });
        }
        return page(res, details.uid, "Invalid login or password.");
      }
      return page(res, details.uid, "");
    } catch (err) {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end(String(err));
    }
  });
  console.log(`listening ${issuer}`);
});

function page(res, uid, error) {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(`<!doctype html><title>Test provider sign-in</title><h1>Test provider</h1>
<p id="error">${escape(error)}</p>
<form method="post" action="/interaction/${escape(uid)}/login">
<input name="login" id="login"> <input name="password" id="password" type="password">
<button type="submit" id="submit">Sign in</button></form>`);
}
