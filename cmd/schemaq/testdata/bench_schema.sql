CREATE SCHEMA concerts;
CREATE TABLE concerts.singer (singer_id int PRIMARY KEY, name text, country text, age int);
CREATE TABLE concerts.stadium (stadium_id int PRIMARY KEY, name text, capacity int);
CREATE TABLE concerts.concert (concert_id int PRIMARY KEY, stadium_id int REFERENCES concerts.stadium, year int);
CREATE TABLE concerts.singer_in_concert (concert_id int REFERENCES concerts.concert, singer_id int REFERENCES concerts.singer);
CREATE SCHEMA pets;
CREATE TABLE pets.owner (owner_id int PRIMARY KEY, name text);
CREATE TABLE pets.pet (pet_id int PRIMARY KEY, owner_id int REFERENCES pets.owner, pet_type text, weight numeric);
