// Every MCP action registers itself on import; this list decides which modules are part of the gateway.
import './status.js';
import './legacy.js';
import './agents.js';
import './threads.js';
import './rooms.js';
import './skills.js';
