DROP TABLE callback_secrets;
DROP TABLE callbacks;
