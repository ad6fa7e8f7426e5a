-- The shop world of the demo: a refund touches orders, refunds, ledger and emails;
-- `inventory` is unrelated and must stay untouched.
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    total REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('paid', 'shipped', 'refunded', 'cancelled'))
);
CREATE TABLE refunds (
    id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(id),
    amount REAL NOT NULL,
    reason TEXT NOT NULL,
    idempotency_key TEXT UNIQUE  -- a retried refund with the same key is not paid twice
);
CREATE TABLE ledger (
    id INTEGER PRIMARY KEY,
    order_id INTEGER REFERENCES orders(id),
    amount REAL NOT NULL,
    memo TEXT NOT NULL
);
CREATE TABLE emails (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    template TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE inventory (
    sku TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    stock INTEGER NOT NULL
);

INSERT INTO customers VALUES
    (17, 'Mia Li', 'mia.li@example.com'),
    (23, 'Noah Park', 'noah.park@example.com'),
    (42, 'Ada Okafor', 'ada.okafor@example.com');
INSERT INTO orders VALUES
    (4811, 23, 120.00, 'shipped'),
    (4812, 17, 35.00, 'paid'),
    (4813, 42, 89.90, 'paid');
INSERT INTO ledger VALUES
    (1, 4811, 120.00, 'payment order 4811'),
    (2, 4812, 35.00, 'payment order 4812'),
    (3, 4813, 89.90, 'payment order 4813');
INSERT INTO inventory VALUES
    ('MUG-01', 'Enamel mug', 140),
    ('TEE-M', 'T-shirt, medium', 62);
