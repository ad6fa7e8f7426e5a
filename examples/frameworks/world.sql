-- The inventory world of the framework examples: two items and their reservations.
CREATE TABLE items (sku TEXT PRIMARY KEY, name TEXT NOT NULL, stock INTEGER NOT NULL);
CREATE TABLE reservations (
    id INTEGER PRIMARY KEY,
    sku TEXT NOT NULL REFERENCES items (sku),
    qty INTEGER NOT NULL
);
INSERT INTO items VALUES ('mug', 'Blue mug', 5), ('plate', 'Dinner plate', 4);
