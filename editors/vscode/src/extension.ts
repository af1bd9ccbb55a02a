// Failpedia for VS Code: starts `failpedia lsp` and adds three commands. Everything is diagnosed
// locally by the language server; nothing leaves the machine.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

const MAX_OUTPUT = 50 * 1024 * 1024; // characters of a terminal command's output kept for diagnosis

let client: LanguageClient | undefined;
const lastOutput = new Map<vscode.Terminal, string>();

function command(): { cmd: string; args: string[] } {
  const config = vscode.workspace.getConfiguration("failpedia");
  const [cmd, ...args] = config.get<string[]>("command", ["failpedia"]);
  const entries = config.get<string>("entries", "");
  return { cmd, args: entries ? [...args, "--entries", entries] : args };
}

function withEntries(sub: string[]): { cmd: string; args: string[] } {
  const { cmd, args } = command();
  const entries = args.indexOf("--entries");
  const base = entries >= 0 ? args.slice(0, entries) : args;
  const extra = entries >= 0 ? args.slice(entries) : [];
  return { cmd, args: [...base, ...sub, ...extra] };
}

async function diagnoseText(text: string): Promise<void> {
  if (!text.trim()) {
    void vscode.window.showInformationMessage("Failpedia: nothing to diagnose (the selection or output is empty).");
    return;
  }
  // An untitled document in the `log` language: the server diagnoses it like a log file, and the
  // results show where VS Code shows problems, with hover and the lightbulb.
  const doc = await vscode.workspace.openTextDocument({ language: "log", content: text });
  await vscode.window.showTextDocument(doc, { preview: false });
  if (client) {
    await client.sendRequest("workspace/executeCommand", { command: "failpedia.diagnose", arguments: [doc.uri.toString()] });
  }
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showInformationMessage("Failpedia: open a file and select the log or traceback first.");
    return;
  }
  const text = editor.selections.map((s) => editor.document.getText(s)).join("\n");
  await diagnoseText(text || editor.document.getText());
}

async function diagnoseTerminal(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) {
    void vscode.window.showInformationMessage("Failpedia: no terminal is open.");
    return;
  }
  // The terminal's selection has no API of its own: copy it, read it, put the clipboard back.
  const saved = await vscode.env.clipboard.readText();
  await vscode.env.clipboard.writeText("");
  await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
  const selection = await vscode.env.clipboard.readText();
  await vscode.env.clipboard.writeText(saved);
  const text = selection || lastOutput.get(terminal) || "";
  if (!text) {
    void vscode.window.showInformationMessage(
      "Failpedia: select the output in the terminal (or enable shell integration so the last command's output is kept).",
    );
    return;
  }
  await diagnoseText(text);
}

interface SearchResult {
  slug: string;
  title: string;
  url: string;
  summary?: string;
}

async function search(): Promise<void> {
  const query = await vscode.window.showInputBox({ prompt: "Search Failpedia: words, #tags or a pasted error line", placeHolder: "#ddp #oom" });
  if (!query) {
    return;
  }
  const { cmd, args } = withEntries(["search", "--json", query]);
  const results = await new Promise<SearchResult[]>((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout).results as SearchResult[]);
      } catch {
        void vscode.window.showErrorMessage(`Failpedia search failed: ${stderr || error?.message || "no output"}`);
        resolve([]);
      }
    });
  });
  if (!results.length) {
    void vscode.window.showInformationMessage(`Failpedia: no entry matches '${query}'.`);
    return;
  }
  const pick = await vscode.window.showQuickPick(
    results.map((r) => ({ label: r.title, description: r.slug, detail: r.summary, url: r.url })),
    { matchOnDescription: true, matchOnDetail: true },
  );
  if (pick) {
    await vscode.env.openExternal(vscode.Uri.parse(pick.url));
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const { cmd, args } = withEntries(["lsp"]);
  const serverOptions: ServerOptions = { command: cmd, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", pattern: "**/*.{log,out,err}" },
      { scheme: "file", pattern: "**/entries/**/*.yaml" },
      { scheme: "untitled", language: "log" },
      { language: "log" },
    ],
  };
  client = new LanguageClient("failpedia", "Failpedia", serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.commands.registerCommand("failpedia.diagnoseSelection", diagnoseSelection),
    vscode.commands.registerCommand("failpedia.diagnoseTerminal", diagnoseTerminal),
    vscode.commands.registerCommand("failpedia.search", search),
    // Shell integration: keep each terminal's last command output (bounded) for "Diagnose terminal output".
    vscode.window.onDidStartTerminalShellExecution(async (event) => {
      let text = "";
      for await (const chunk of event.execution.read()) {
        text = (text + chunk).slice(-MAX_OUTPUT);
      }
      lastOutput.set(event.terminal, text);
    }),
    vscode.window.onDidCloseTerminal((terminal) => lastOutput.delete(terminal)),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
