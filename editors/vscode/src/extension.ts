// Starts `idemchart lsp` for machine files: YAML and DSL machines, SCXML,
// and XState sources. Everything else (diagnostics, fixes, hover, ...)
// comes from the server.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration("idemchart");
  const command = config.get<string>("path") || "idemchart";
  const lintDocs = config.get<string>("lintDocs") || undefined;
  const server: ServerOptions = { command, args: ["lsp"] };
  const options: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", pattern: "**/*.{yaml,yml,chart,scxml,json}" },
      { scheme: "file", language: "javascript" },
      { scheme: "file", language: "typescript" },
      { scheme: "file", language: "javascriptreact" },
      { scheme: "file", language: "typescriptreact" },
    ],
    initializationOptions: lintDocs ? { lintDocs } : {},
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/idemchart.toml"),
    },
  };
  client = new LanguageClient("idemchart", "idemchart", server, options);
  context.subscriptions.push(client);
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
