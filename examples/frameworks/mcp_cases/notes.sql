-- The world of the notes case: the table mcp-server-sqlite writes a note into.
CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE archive (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
