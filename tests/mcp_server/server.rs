//! A small MCP server for hookwire's tests, written with `rmcp`'s server side.
//!
//! `mcp_test_server` serves on stdin/stdout; `mcp_test_server --http 127.0.0.1:0` serves
//! streamable HTTP at `/mcp` and prints `listening on http://ADDR/mcp` as its first line.
//! Each start appends a line to `starts.log` in its working directory (the tests count
//! restarts with it).
//!
//! Tools:
//! - `read_note {name}`: the note's text (`alpha`, `bravo`), an error result for another name;
//! - `slow {seconds}`: sleeps, then says so; a call cancelled by the client writes
//!   `slow-cancelled` in the working directory;
//! - `crash`: writes a line on stderr and exits with status 3 while the call is open;
//! - `media`: text, an image, an embedded resource and a resource link;
//! - `environment`: the names of its environment variables, and `GREETING`'s value;
//! - `add_tool`: adds the tool `extra` and sends `notifications/tools/list_changed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{json, Value};

#[derive(Clone, Default)]
struct TestServer {
    /// Whether `add_tool` was called.
    extra: Arc<AtomicBool>,
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("schemas are objects")
    };
    Tool::new(name, description, schema)
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "read_note",
                "Read a note by name",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
            tool(
                "slow",
                "Sleep for a while",
                json!({"type": "object", "properties": {"seconds": {"type": "number"}}}),
            ),
            tool("crash", "Exit at once", no_arguments()),
            tool("media", "Return an image and resources", no_arguments()),
            tool("environment", "Show the environment", no_arguments()),
            tool("add_tool", "Add the tool extra", no_arguments()),
        ];
        if self.extra.load(Ordering::SeqCst) {
            tools.push(tool("extra", "A tool added later", no_arguments()));
        }
        tools
    }
}

fn text(content: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(content)]).into())
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "read_note" => {
                let name = arguments.get("name").and_then(Value::as_str).unwrap_or("");
                match name {
                    "alpha" => text("ALPHA NOTE: the first letter"),
                    "bravo" => text("BRAVO NOTE: the second letter"),
                    other => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "no note named {other:?}"
                    ))])
                    .into()),
                }
            }
            "slow" => {
                let seconds = arguments
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(30.0);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => text(format!("slept {seconds}s")),
                    _ = context.ct.cancelled() => {
                        let _ = std::fs::write("slow-cancelled", "cancelled\n");
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "media" => {
                let mut link = Resource::new("file:///docs/manual.pdf", "manual.pdf");
                link.mime_type = Some("application/pdf".into());
                link.size = Some(4096);
                Ok(CallToolResult::success(vec![
                    ContentBlock::text("here are the files"),
                    // Eight bytes of a PNG header.
                    ContentBlock::image("iVBORw0KGgo=", "image/png"),
                    ContentBlock::resource(ResourceContents::TextResourceContents {
                        uri: "file:///notes/today.txt".into(),
                        mime_type: Some("text/plain".into()),
                        text: "twelve bytes".into(),
                        meta: None,
                    }),
                    ContentBlock::resource_link(link),
                ])
                .into())
            }
            "environment" => {
                let mut names: Vec<String> = std::env::vars_os()
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                names.sort();
                let greeting = std::env::var("GREETING").unwrap_or_default();
                text(format!("names: {}\nGREETING={greeting}", names.join(",")))
            }
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("added extra")
            }
            "extra" => text("the extra tool ran"),
            other => Err(ErrorData::invalid_params(
                format!("no tool named {other}"),
                None,
            )),
        }
    }
}

fn note_start() {
    use std::io::Write;
    if let Ok(mut log) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open("starts.log")
    {
        let _ = writeln!(log, "started {}", std::process::id());
    }
}

#[tokio::main]
async fn main() {
    note_start();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, addr] if flag == "--http" => serve_http(addr).await,
        _ => {
            eprintln!("mcp_test_server on stdio");
            let Ok(service) = TestServer::default().serve(rmcp::transport::stdio()).await else {
                std::process::exit(1);
            };
            let _ = service.waiting().await;
        }
    }
}

async fn serve_http(addr: &str) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let server = TestServer::default();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    };
    let Ok(bound) = listener.local_addr() else {
        std::process::exit(1);
    };
    println!("listening on http://{bound}/mcp");
    let _ = axum::serve(listener, router).await;
}
