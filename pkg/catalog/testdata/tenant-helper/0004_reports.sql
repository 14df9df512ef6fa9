CREATE TABLE reports (
    id smallserial PRIMARY KEY,
    project_id integer NOT NULL REFERENCES projects (id),
    body text
);

CREATE VIEW project_totals AS
SELECT p.id, p.title, sum(i.amount) AS total, count(*) AS invoices, p.title || ' (' || p.id || ')' AS label
FROM projects p JOIN invoices i ON i.project_id = p.id
GROUP BY p.id, p.title;
